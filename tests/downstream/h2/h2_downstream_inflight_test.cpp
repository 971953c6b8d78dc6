// What the HTTP/2 downstream client holds: in-flight counts, a dropped client, a gateway's calls.
//
// The downstream client over HTTP/2 (stream_call.hpp, transfer_request::http2), against a real
// HTTP/2 server in another process: h2_server.py (python3-h2) over h2c by prior knowledge; and
// cpp-httplib's TLS server, which speaks no h2, for the fall back to HTTP/1.1. Every call ends as
// stream_call.hpp says by its timeout, and the client holds nothing afterwards (inflight() back
// to 0).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"

#include "support/gateway_fixture.hpp"
#include "support/h2_downstream_server.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"
#include "downstream/h2/h2_downstream_test_support.hpp"

using namespace std::chrono_literals;
using namespace gather;
using gather::test::h2_downstream_server;
using json = nlohmann::json;
using namespace gather::test::h2_downstream_support;

TEST_CASE("a section and a batch with http2 true call over h2c, a failing one degrades as any", "[h2-downstream]") {
  using namespace gather::test;
  h2_downstream_server server;
  auto sections = json::array({section("part", server.url("/echo?p={id}"), 2000, {{"required", true}, {"http2", true}}),
                               section("slow", server.url("/hang"), 300, {{"fallback", "none"}, {"http2", true}})});
  auto config = route_config_json("/p/{id}", sections, 3000, {{"deadline_header", "x-deadline-ms"}});
  config["routes"].push_back({{"path", "/items"},
                              {"batch", {{"url", server.url("/echo?item={item}")}, {"timeout_ms", 2000}, {"http2", true}}}});
  running_gateway gateway(config);
  const auto answer = gateway.get("/p/7", {{"X-Request-Id", "req-h2"}});
  REQUIRE(answer);
  REQUIRE(answer->status == 200);
  const auto body = json::parse(answer->body);
  const auto& echo = body["data"]["part"];
  CHECK(echo["path"] == "/echo?p=7");
  std::map<std::string, std::string> seen;
  for (const auto& h : echo["headers"])
    seen[h[0]] = h[1];
  CHECK(seen["x-request-id"] == "req-h2");
  CHECK(seen.count("x-deadline-ms") == 1);
  CHECK(seen[":scheme"] == "http");
  CHECK(body["data"]["slow"] == "none");
  CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos); // the slow call's timeout
  const auto batch = gateway.post("/items", R"({"items": ["a", "b"]})");
  REQUIRE(batch);
  CHECK(batch->status == 200);
  CHECK(batch->body.find("/echo?item=b") != std::string::npos);
  for (int i = 0; i < 500 && gateway.gw().downstream_inflight() != 0; ++i)
    std::this_thread::sleep_for(2ms);
  CHECK(gateway.gw().downstream_inflight() == 0);
}

TEST_CASE("the in-flight count: each call counted once and let go once, cancelled, timed out or handed over",
          "[h2-downstream]") {
  SECTION("a cancelled http2 transfer and a cancelled call") {
    h2_downstream_server server;
    downstream_client client;
    std::atomic<int> runs{0};
    const auto transfer = client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    server.line_with("REQUEST");
    auto events = std::make_shared<recorded_call>();
    const auto call = client.call(stream_get(server.url("/hang"), 10s), events);
    server.line_with("REQUEST");
    CHECK(client.inflight() == 2);
    client.cancel(transfer);
    client.cancel(call);
    CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos);
    CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos);
    client_is_empty(client);
    CHECK(runs.load() == 0);
    CHECK_FALSE(events->has_ended());
  }
  SECTION("a timed-out http2 transfer and a timed-out call") {
    h2_downstream_server server;
    downstream_client client;
    CHECK(h2_fetch(client, server.url("/hang"), 200ms).error == transfer_error::timeout);
    CHECK(start_call(client, stream_get(server.url("/hang"), 200ms))->wait().how == stream_ending::timeout);
    client_is_empty(client);
  }
  SECTION("http2 transfers handed over to HTTP/1.1 by ALPN: one request each, none counted twice") {
    const auto& files = gather::test::tls_files::get();
    trusted_h2_ca ca(files.cert);
    std::atomic<int> requests{0};
    h1_only_tls_server server(files, [&](const httplib::Request&, httplib::Response& res) {
      ++requests;
      res.set_content(R"({"ok":1})", "application/json");
    }, 16);
    downstream_client client;
    constexpr int at_once = 8; // all waiting for the first ALPN answer
    std::atomic<int> ok{0}, runs{0};
    for (int i = 0; i < at_once; ++i)
      client.submit(http2_transfer(server.url, 3s), [&](transfer_result&& r) {
        ok += r.http_status == 200 ? 1 : 0;
        ++runs;
      });
    REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 8s));
    CHECK(ok.load() == at_once);
    CHECK(client.inflight() == 0);
    CHECK(requests.load() == at_once);
  }
}

TEST_CASE("a client dropped after its loop stopped: running and queued calls of both kinds go, none completes",
          "[h2-downstream]") {
  // The tickets of calls still in the stopped loop's queue are destroyed with the loop, after the
  // client (ASan sees any use of what the client freed).
  h2_downstream_server server;
  gather::test::silent_server silent;
  std::atomic<int> runs{0};
  std::vector<std::shared_ptr<recorded_call>> calls;
  {
    io_loops loops(1);
    loops.start();
    downstream_client client(loops);
    for (int i = 0; i < 3; ++i)
      client.submit(transfer_request{silent.base_url() + "/x", {}, 10s, 1 << 20}, counted(runs));
    for (int i = 0; i < 2; ++i)
      client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    for (int i = 0; i < 2; ++i) {
      calls.push_back(std::make_shared<recorded_call>());
      client.call(stream_get(server.url("/hang"), 10s), calls.back());
    }
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 3; }));
    for (int i = 0; i < 4; ++i)
      server.line_with("REQUEST");
    CHECK(client.inflight() == 7);
    loops.stop();
    client.submit(transfer_request{silent.base_url() + "/x", {}, 10s, 1 << 20}, counted(runs));
    client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    calls.push_back(std::make_shared<recorded_call>());
    client.call(stream_get(server.url("/hang"), 10s), calls.back());
    CHECK(client.inflight() == 10);
    CHECK(client.queued() == 3);
  } // the client first, then the loops with the handlers they never ran
  CHECK(runs.load() == 0);
  for (const auto& call : calls)
    CHECK_FALSE(call->has_ended());
  CHECK(gather::test::eventually([&] { return silent.closed_by_peer() == 3; }, 2s));
}
