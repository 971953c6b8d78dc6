// Transfers together: chained, cancelled, dropped, 1000 hung, kept-alive and idle connections.
//
// The downstream client against real servers on loopback, and what it read classified by both of
// the body's validators. Time limits are generous on purpose (a loaded 2-core machine): they
// separate "bounded by the timeout" from "waited for the server".
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"
#include "support/test_server.hpp"
#include "downstream/call/downstream_client_test_support.hpp"

using namespace std::chrono_literals;
using gather::downstream_client;
using gather::transfer_error;
using gather::transfer_result;
using gather::test::eventually;
using gather::test::silent_server;
using gather::test::test_server;
using steady = std::chrono::steady_clock;
using namespace gather::test::downstream_client_support;

namespace {

std::size_t live_thread_count() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<std::size_t>(std::distance(begin(tasks), end(tasks)));
}

// Each transfer to the silent server costs two descriptors in this process (both ends).
void ensure_descriptors(rlim_t wanted) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

} // namespace

TEST_CASE("a completion may submit the next transfer", "[client]") {
  test_server server;
  server.get("/n", [](const httplib::Request&, httplib::Response& res) { res.set_content("n", "text/plain"); });
  server.start();
  downstream_client client;

  std::promise<transfer_result> second;
  client.submit(request_for(server.base_url() + "/n"), [&](transfer_result&&) {
    client.submit(request_for(server.base_url() + "/n"),
                  [&](transfer_result&& r) { second.set_value(std::move(r)); });
  });
  auto future = second.get_future();
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  CHECK(future.get().http_status == 200);
}

TEST_CASE("cancel closes the connection and the completion never runs", "[client]") {
  silent_server silent;
  downstream_client client;
  std::atomic<bool> completed{false};

  const auto id = client.submit(request_for(silent.base_url() + "/x", 10s),
                                [&](transfer_result&&) { completed = true; });
  REQUIRE(eventually([&] { return silent.accepted() == 1; }));
  CHECK(client.inflight() == 1);

  client.cancel(id);
  CHECK(eventually([&] { return silent.closed_by_peer() == 1; }, 2s));
  CHECK(client.inflight() == 0);
  client.cancel(id);    // idempotent
  client.cancel(12345); // unknown ids are ignored
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(completed.load());
}

TEST_CASE("destroying the client drops transfers without completions", "[client]") {
  silent_server silent;
  std::atomic<int> completed{0};
  const auto start = steady::now();
  {
    downstream_client client;
    for (int i = 0; i < 10; ++i)
      client.submit(request_for(silent.base_url() + "/x", 10s), [&](transfer_result&&) { ++completed; });
    REQUIRE(eventually([&] { return silent.accepted() == 10; }));
  }
  CHECK(elapsed_ms(start) < 2000);
  CHECK(eventually([&] { return silent.closed_by_peer() == 10; }, 2s));
  CHECK(completed.load() == 0);
}

TEST_CASE("1000 hung transfers time out together on one thread", "[client]") {
  constexpr int transfers = 1000;
  ensure_descriptors(3 * transfers);
  silent_server silent;
  downstream_client client;
  const std::size_t threads_before = live_thread_count();

  std::atomic<int> timeouts{0}, others{0};
  const auto start = steady::now();
  for (int i = 0; i < transfers; ++i)
    client.submit(request_for(silent.base_url() + "/x", 300ms), [&](transfer_result&& r) {
      ++(r.error == transfer_error::timeout ? timeouts : others);
    });
  std::size_t most_threads = 0;
  REQUIRE(eventually(
      [&] {
        most_threads = std::max(most_threads, live_thread_count());
        return timeouts + others == transfers;
      },
      10s));
  const long took = elapsed_ms(start);
  WARN(transfers << " timeouts (300 ms) done after " << took << " ms, " << silent.accepted()
                 << " connections; threads before " << threads_before << ", at most "
                 << most_threads << " during");

  CHECK(timeouts.load() == transfers);
  CHECK(took < 3000);
  CHECK(client.inflight() == 0);
  CHECK(most_threads <= threads_before + 2);
}

TEST_CASE("sequential transfers reuse a keep-alive connection", "[client]") {
  test_server server;
  // httplib closes a connection after 5 requests by default; allow a realistic 1000.
  server.raw().set_keep_alive_max_count(1000);
  std::mutex mutex;
  std::set<int> client_ports;
  server.get("/k", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      client_ports.insert(req.remote_port);
    }
    res.set_content("k", "text/plain");
  });
  server.start();
  downstream_client client;

  for (int i = 0; i < 200; ++i) REQUIRE(fetch_request(client, request_for(server.base_url() + "/k")).http_status == 200);
  std::lock_guard<std::mutex> lock(mutex);
  INFO("connections used: " << client_ports.size());
  CHECK(client_ports.size() <= 3);
}

TEST_CASE("downstream_max_idle_connections bounds the ready connections a loop keeps, all origins together",
          "[client][pool]") {
  // Two origins, one loop, room for one ready connection: A's stays ready between its calls, B's
  // finds the room taken and is closed after each answer (a new connection per call); with 0,
  // none is kept at all.
  const std::size_t room = GENERATE(0, 1);
  INFO("downstream_max_idle_connections " << room);
  std::mutex mutex;
  std::map<std::string, std::set<int>> ports; // per origin, the client ports its requests came from
  const auto serve = [&](test_server& server, const std::string& name) {
    server.raw().set_keep_alive_max_count(1000);
    server.get("/p", [&mutex, &ports, name](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ports[name].insert(req.remote_port);
      }
      res.set_content("p", "text/plain");
    });
    server.start();
  };
  test_server a;
  test_server b;
  serve(a, "a");
  serve(b, "b");
  gather::io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{}, 60000ms, room});
    for (int i = 0; i < 10; ++i) {
      REQUIRE(fetch_request(client, request_for(a.base_url() + "/p")).http_status == 200);
      REQUIRE(fetch_request(client, request_for(b.base_url() + "/p")).http_status == 200);
    }
    CHECK(client.inflight() == 0);
  }
  loops.stop();
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(ports["a"].size() == (room == 0 ? 10u : 1u));
  CHECK(ports["b"].size() == 10u);
}

TEST_CASE("connects that time out against one downstream never disturb another's transfers", "[client]") {
  // Written for the curl client (curl 7.88 closed some timed-out sockets behind the client's back,
  // and a reused descriptor number then closed a healthy transfer's socket); kept for any client:
  // sockets that die in connect must leave the descriptors of later transfers alone.
  int hole_port = 0;
  const int hole = gather::test::listen_on_loopback(1, hole_port); // never accepts: connects hang
  test_server healthy;
  healthy.get("/ok", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  healthy.start();
  downstream_client client;
  std::atomic<int> done{0}, ok{0};
  std::mutex mutex;
  std::map<std::string, int> failures;
  int submitted = 0, healthy_sent = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 100; ++i, ++submitted)
      client.submit(request_for("http://127.0.0.1:" + std::to_string(hole_port) + "/x", 100ms),
                    [&](transfer_result&&) { ++done; });
    for (int i = 0; i < 50; ++i, ++submitted, ++healthy_sent) // within the server's 64 threads
      client.submit(request_for(healthy.base_url() + "/ok"), [&](transfer_result&& r) {
        if (r.http_status == 200) {
          ++ok;
        } else {
          std::lock_guard<std::mutex> lock{mutex};
          ++failures[r.detail];
        }
        ++done;
      });
    REQUIRE(eventually([&] { return done.load() == submitted; }, 10s));
  }
  for (const auto& [detail, n] : failures)
    UNSCOPED_INFO(n << " x " << detail);
  CHECK(ok.load() == healthy_sent);
  CHECK(client.inflight() == 0);
  ::close(hole);
}
