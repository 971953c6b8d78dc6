// Inbound checks and load: their order, max_inflight, hang-ups, 500 at once, late replies.
//
// The aggregate path end to end: real downstreams on 127.0.0.1, the real gateway, real HTTP.
// Timing assertions keep margins a loaded 2-core machine keeps.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gather/downstream/call/downstream_client.hpp"
#include "support/test_helpers.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

TEST_CASE("inbound checks: no_route, method, size, in the contract's order", "[gateway]") {
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  running_gateway gw{route_config_json("/p", {section("s", down.base_url() + "/ok", 500, {{"required", true}})}, 1000,
                                       {{"max_body_bytes", 100}})};
  auto c = gw.client();
  auto post = c.Post("/p", "{}", "application/json");
  REQUIRE(post);
  CHECK(post->status == 405);
  CHECK(post->get_header_value("Allow") == "GET");
  CHECK(body_of(post)["error"] == "method_not_allowed");
  auto head = c.Head("/p");
  REQUIRE(head);
  CHECK(head->status == 405);
  auto unknown = c.Post("/nowhere", std::string(1000, 'x'), "text/plain");
  REQUIRE(unknown);
  CHECK(unknown->status == 404); // no_route comes before size
  auto too_big = c.Post("/p", std::string(1000, 'x'), "text/plain");
  CHECK(too_big->status == 405); // method comes before size
  CHECK(gw.get("/healthz")->status == 200);
  CHECK(body_of(gw.get("/healthz"))["status"] == "ok");
  auto metrics = gw.get("/metrics");
  CHECK(metrics->get_header_value("Content-Type") == "text/plain; version=0.0.4");
}

TEST_CASE("max_inflight: the request over the limit gets 503 at once, /healthz still answers", "[gateway]") {
  silent_server hung;
  running_gateway gw{route_config_json("/p", {optional_section("s", hung.base_url() + "/x", 3000)}, 3000,
                                       {{"max_inflight", 2}})};
  std::vector<std::thread> holders;
  for (int i = 0; i < 2; ++i)
    holders.emplace_back([&] { gw.get("/p"); });
  REQUIRE(eventually([&] { return hung.accepted() == 2; }));
  auto start = clock_type::now();
  auto r = gw.get("/p");
  CHECK(ms_since(start) < 500);
  CHECK(r->status == 503);
  CHECK(r->get_header_value("Retry-After") == "1");
  CHECK(body_of(r)["error"] == "overloaded");
  CHECK(gw.get("/healthz")->status == 200);
  CHECK(gw.gw().stats().overloaded.load() == 1);
  for (auto& t : holders)
    t.join();
}

TEST_CASE("a client that hangs up cancels its request's downstream calls", "[gateway]") {
  silent_server hung;
  running_gateway gw{route_config_json("/p", {optional_section("s", hung.base_url() + "/x", 10000)}, 10000)};
  std::thread client([&] {
    httplib::Client c{"127.0.0.1", gw.port()};
    c.set_read_timeout(0, 300000); // gives up after 300 ms and closes the connection
    c.Get("/p");
  });
  REQUIRE(eventually([&] { return hung.accepted() == 1; }));
  client.join();
  auto start = clock_type::now();
  CHECK(eventually([&] { return hung.closed_by_peer() == 1; }, milliseconds{3000}));
  CHECK(ms_since(start) < 3000); // far before the 10 s timeout and deadline
  CHECK(eventually([&] { return gw.gw().stats().coordinators.load() == 0; }));
}

TEST_CASE("500 requests on a hung section: all answered by the deadline, no thread left behind", "[gateway]") {
  silent_server hung;
  running_gateway gw{route_config_json("/p", {optional_section("hung", hung.base_url() + "/x", 5000)}, 400,
                                       {{"max_inflight", 600}})};
  gw.get("/p"); // warm up: every lazily created thread exists
  REQUIRE(eventually([&] { return gw.gw().stats().coordinators.load() == 0; }));
  const int before = thread_count();

  gather::downstream_client load; // 500 concurrent inbound requests from one thread
  std::atomic<int> ok{0}, degraded{0}, answered{0};
  std::mutex outcomes_mutex;
  std::map<std::string, int> outcomes;
  auto start = clock_type::now();
  for (int i = 0; i < 500; ++i) {
    gather::transfer_request req{"http://127.0.0.1:" + std::to_string(gw.port()) + "/p", {}, milliseconds{10000}};
    load.submit(std::move(req), [&](gather::transfer_result&& r) {
      {
        std::lock_guard<std::mutex> g{outcomes_mutex};
        ++outcomes[std::to_string(static_cast<int>(r.error)) + "/" + std::to_string(r.http_status)];
      }
      if (r.http_status == 200) {
        ++ok;
        if (json::parse(r.body, nullptr, false).value("degraded", false))
          ++degraded;
      }
      ++answered;
    });
  }
  REQUIRE(eventually([&] { return answered == 500; }, milliseconds{20000}));
  auto took = ms_since(start);
  INFO("transfer error/HTTP status counts: " << json(outcomes).dump());
  CHECK(ok == 500);
  CHECK(degraded == 500);
  CHECK(took < 5000); // 500 requests with a 400 ms deadline, on a loaded 2-core machine
  CHECK(eventually([&] { return gw.gw().stats().coordinators.load() == 0 && gw.gw().stats().workers.load() == 0; }));
  CHECK(eventually([&] { return hung.open_connections() == 0; }));
  CHECK(thread_count() <= before + 2); // the load client's own I/O thread (+1 margin)
}

TEST_CASE("late replies: an answer after the request was answered is dropped and counted", "[gateway]") {
  // A downstream that answers right at the deadline races the coordinator's answer: some replies
  // arrive after it and must be dropped, counted and harmless. Delays sweep 1 ms apart across the
  // deadline, widely: where the race window sits depends on the machine (under ASan at -O0 the
  // reply's own way takes milliseconds more). The window is the few microseconds between the
  // coordinator's answer and its workers' cancels reaching the loop, so rounds go on until one
  // reply has landed in it (a few rounds, most often; 40 rounds missed it about once in ten runs).
  test_server down(128);
  std::atomic<int> n{0};
  down.get("/edge", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{30 + (n++ % 31)});
    answer_json(res, {{"ok", 1}});
  });
  down.start();
  running_gateway gw{route_config_json("/p", {optional_section("s", down.base_url() + "/edge", 1000)}, 50,
                                       {{"max_inflight", 200}})};
  gather::downstream_client load;
  std::atomic<int> answered{0}, statuses_ok{0};
  int sent = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int round = 0; round < 400 && gw.gw().stats().late_replies.load() == 0 &&
                     std::chrono::steady_clock::now() < give_up;
       ++round) {
    for (int i = 0; i < 50; ++i, ++sent) {
      load.submit({"http://127.0.0.1:" + std::to_string(gw.port()) + "/p", {}, milliseconds{10000}},
                  [&](gather::transfer_result&& r) {
                    statuses_ok += r.http_status == 200;
                    ++answered;
                  });
    }
    REQUIRE(eventually([&] { return answered == sent; }, milliseconds{10000}));
  }
  CHECK(statuses_ok == sent);
  CHECK(gw.gw().stats().late_replies.load() > 0);
  CHECK(gw.get("/p")->status == 200); // still serving
}
