// The downstream client's name lookups (name_lookups.hpp): a thread per host:port, lookups asked
// for together answered by one getaddrinfo. Only names in /etc/hosts are looked up here, so no
// query leaves the machine; a name that hangs while others resolve is the fault lab's
// (bench/faults/, "silent DNS" in docs/security.md).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>

#include "gather/downstream/pool/name_lookups.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using gather::test::eventually;

namespace {

/// An io_context run by a thread of its own while the test lasts.
struct running_loop {
  boost::asio::io_context loop;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{loop.get_executor()};
  std::thread thread{[this] { loop.run(); }};
  ~running_loop() {
    work.reset();
    loop.stop();
    thread.join();
  }
};

} // namespace

TEST_CASE("name lookups: localhost resolves on its own thread and the answer comes on the loop", "[client][dns]") {
  running_loop runner;
  gather::name_lookups lookups;
  std::atomic<bool> done{false}, on_loop{false};
  std::vector<boost::asio::ip::tcp::endpoint> found;
  boost::system::error_code error;
  lookups.resolve("localhost", "8080", runner.loop, [&](const boost::system::error_code& ec, auto endpoints) {
    on_loop = runner.thread.get_id() == std::this_thread::get_id();
    error = ec;
    found = std::move(endpoints);
    done = true;
  });
  REQUIRE(eventually([&] { return done.load(); }, 10s));
  CHECK(on_loop);
  CHECK_FALSE(error);
  REQUIRE_FALSE(found.empty());
  for (const auto& e : found) {
    CHECK(e.address().is_loopback());
    CHECK(e.port() == 8080);
  }
  CHECK(lookups.threads() == 1);
}

TEST_CASE("name lookups: a thread per host and port, every waiter answered", "[client][dns]") {
  running_loop runner;
  gather::name_lookups lookups;
  std::atomic<int> answered{0}, failed{0};
  constexpr int per_name = 200;
  for (int i = 0; i < per_name; ++i)
    for (const char* port : {"80", "443"})
      lookups.resolve("localhost", port, runner.loop, [&](const boost::system::error_code& ec, auto endpoints) {
        ++(ec || endpoints.empty() ? failed : answered);
      });
  REQUIRE(eventually([&] { return answered.load() + failed.load() == 2 * per_name; }, 10s));
  CHECK(failed.load() == 0);
  CHECK(lookups.threads() == 2);
}
