// The loops' timers without timerfd (include/gather/runtime/asio_timers.hpp): they still fire,
// never early, a cancelled one stays cancelled, and neither a loop of this build nor the shipped
// binary holds a timerfd.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gather/runtime/io_loops.hpp"
#include "support/child_process.hpp"
#include "support/test_helpers.hpp"

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

/// How many timerfds the process `pid` ("self" for this one) holds open.
int timerfds_of(const std::string& pid) {
  int n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + pid + "/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(fd.path(), ec).string() == "anon_inode:[timerfd]")
      ++n;
  }
  return n;
}

} // namespace

TEST_CASE("a loop's timers: no timerfd, none fires early, a cancelled one stays cancelled", "[unit][runtime]") {
  const int before = timerfds_of("self");
  gather::io_loops loops{1};
  loops.start();
  boost::asio::steady_timer early{loops.loop(0)}, late{loops.loop(0)};
  std::promise<bool> early_cancelled;
  std::promise<clock_type::time_point> late_fired;
  clock_type::time_point armed;
  struct stop_first { // declared last: the loop's thread ends before what its handlers use goes
    gather::io_loops& loops;
    ~stop_first() { loops.stop(); }
  } stopper{loops};
  boost::asio::post(loops.loop(0), [&] {
    armed = clock_type::now();
    early.expires_after(10ms);
    early.async_wait([&](const boost::system::error_code& ec) {
      early_cancelled.set_value(ec == boost::asio::error::operation_aborted);
    });
    late.expires_after(40ms);
    late.async_wait([&](const boost::system::error_code& ec) {
      late_fired.set_value(ec ? clock_type::time_point{} : clock_type::now()); // an error fails below
    });
    early.cancel(); // the earliest timer goes: the loop must still wake for the later one
  });
  auto cancelled = early_cancelled.get_future();
  auto fired = late_fired.get_future();
  REQUIRE(fired.wait_for(5s) == std::future_status::ready);
  CHECK(cancelled.get());
  const auto waited = fired.get() - armed;
  CHECK(waited >= 40ms);
  CHECK(waited < 1s); // at most a millisecond late when idle; generous for a loaded machine
  CHECK(timerfds_of("self") == before);
}

TEST_CASE("the gateway binary holds no timerfd while it serves", "[system][runtime]") {
  using gather::test::child_process;
  const nlohmann::json config = {
      {"listen", "127.0.0.1:0"},
      {"routes", {{{"path", "/p"}, {"sections", {{{"name", "a"}, {"url", "http://127.0.0.1:9/x"}, {"timeout_ms", 50}, {"required", true}}}}}}}};
  child_process gw{gather::test::binary, {"serve", "--config", gather::test::temp_file(config.dump())}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  httplib::Client client{"127.0.0.1", gather::test::port_of(*line)};
  REQUIRE(client.Get("/p")); // a request arms the connection's deadline and the call's timeout
  CHECK(timerfds_of(std::to_string(gw.pid())) == 0);
}
