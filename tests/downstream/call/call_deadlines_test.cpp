// A loop's call deadlines (call_deadlines.hpp) on a real io_context: calls come due in the order
// of their points, a call that ended never comes due, a shorter timeout entered later still comes
// first, and a slow point runs once and is followed by its timeout.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gather/downstream/call/call_deadlines.hpp"

using namespace gather::downstream_loop;
using namespace std::chrono_literals;

namespace {

struct fake_call {
  std::uint64_t id = 0;
  bool finished = false;
  call_due due;
};

/// Calls on one loop, with what came due to them in order ("3 slow", "3 timeout").
struct calls_on_a_loop {
  boost::asio::io_context loop;
  std::map<std::uint64_t, fake_call> running;
  std::vector<std::string> seen;
  call_deadlines deadlines{loop, [this](std::uint64_t id, call_deadlines::step what) {
                             auto it = running.find(id);
                             if (it == running.end())
                               return;
                             came_due(deadlines, it->second, what, [&] {
                               seen.push_back(std::to_string(id) + " timeout");
                               it->second.finished = true;
                             });
                           }};

  fake_call& start(std::uint64_t id, std::chrono::microseconds timeout, std::chrono::microseconds slow_after = {}) {
    auto& call = running[id];
    call.id = id;
    std::function<void()> slow;
    if (slow_after.count() > 0)
      slow = [this, id] { seen.push_back(std::to_string(id) + " slow"); };
    arm_call(deadlines, call, timeout, slow_after, std::move(slow));
    return call;
  }
  void end(std::uint64_t id) {
    auto& call = running.at(id);
    call.finished = true;
    disarm_call(deadlines, call);
  }
};

} // namespace

TEST_CASE("calls come due in the order of their points, and an ended call never does", "[unit][downstream][deadlines]") {
  calls_on_a_loop l;
  l.start(1, 30ms);
  l.start(2, 40ms);
  l.start(3, 50ms);
  l.start(4, 10ms); // shorter, entered last: the timer moves to it
  l.end(2);
  const auto began = std::chrono::steady_clock::now();
  l.loop.run(); // returns once nothing is armed any more
  CHECK(l.seen == std::vector<std::string>{"4 timeout", "1 timeout", "3 timeout"});
  CHECK(std::chrono::steady_clock::now() - began >= 50ms); // none early
}

TEST_CASE("a slow point runs once, then the rest of the timeout comes", "[unit][downstream][deadlines]") {
  calls_on_a_loop l;
  l.start(1, 40ms, 10ms);
  l.start(2, 20ms, 30ms); // the slow point after the timeout: never
  l.start(3, 60ms, 5ms);
  while (l.seen.size() < 3) // up to the first timeout, a handler at a time
    l.loop.run_one();
  CHECK(l.seen == std::vector<std::string>{"3 slow", "1 slow", "2 timeout"});
  l.end(3); // after its slow point, before its timeout
  l.loop.run();
  CHECK(l.seen == std::vector<std::string>{"3 slow", "1 slow", "2 timeout", "1 timeout"});
}

TEST_CASE("deadlines gone with their client leave nothing to run", "[unit][downstream][deadlines]") {
  boost::asio::io_context loop;
  bool ran = false;
  {
    call_deadlines deadlines{loop, [&](std::uint64_t, call_deadlines::step) { ran = true; }};
    deadlines.add(call_deadlines::clock::now(), 1, call_deadlines::step::timeout);
  }
  loop.run(); // the aborted wait completes without touching the deadlines that are gone
  CHECK_FALSE(ran);
}
