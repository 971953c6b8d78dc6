// Hostile HTTP/2 clients on the front: rapid reset, floods, a body never sent, stalled clients.
//
// HTTP/2 on the front (docs/gateway.md#http2, docs/security.md#http2): real clients against a real
// gateway on loopback. The frame-level cases are python3-h2 clients in h2_client.py, over h2c.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"
#include "front/h2_test_support.hpp"

using namespace gather::test;
using json = nlohmann::json;
using namespace std::chrono_literals;
using namespace gather::test::h2_front_support;

TEST_CASE("HTTP/2: rapid reset of 2000 streams ends in GOAWAY with far fewer downstream calls", "[front][h2][hostile]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url())};
  const auto seen = h2_case("rapid_reset", gw.port(), {"/p", "2000"});
  CHECK(seen["goaway"] == 11); // ENHANCE_YOUR_CALM
  INFO("downstream calls: " << down.server.calls());
  CHECK(down.server.calls() < 200);
  CHECK(h2_metric(gw, "gather_http2_abuse_total{reason=\"rapid_reset\"}") == 1);
  normal_request_answered(gw.port());
}

TEST_CASE("HTTP/2: a CONTINUATION flood is cut at the limit, a header list over it gets 431", "[front][h2][hostile]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {{"http2", {{"max_header_list_bytes", 8192}}}})};
  const auto flood = h2_case("continuation_flood", gw.port(), {"/p", "1000"});
  CHECK(flood["goaway"] == 11);
  CHECK(h2_metric(gw, "gather_http2_abuse_total{reason=\"continuation_flood\"}") == 1);
  const auto big = h2_case("big_headers", gw.port(), {"/p", "20000"});
  CHECK(big["answer"]["status"] == 431);
  CHECK(json::parse(big["answer"]["body"].get<std::string>())["error"] == "headers_too_large");
  normal_request_answered(gw.port());
}

TEST_CASE("HTTP/2: PING and SETTINGS floods end in GOAWAY", "[front][h2][hostile]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url())};
  for (const std::string kind : {"ping", "settings"}) {
    const auto seen = h2_case("flood", gw.port(), {kind, "5000"});
    INFO(kind);
    CHECK(seen["goaway"] == 11);
  }
  CHECK(h2_metric(gw, "gather_http2_abuse_total{reason=\"control_flood\"}") == 2);
  normal_request_answered(gw.port());
}

TEST_CASE("HTTP/2: a stream whose body never comes ends its connection after request_timeout_ms", "[front][h2][hostile]") {
  h2_downstream down;
  auto cfg = h2_config(down.server.base_url(), {{"request_timeout_ms", 800}});
  cfg["routes"].push_back({{"path", "/batch"},
                           {"batch", {{"url", down.server.base_url() + "/b/{item}"}, {"timeout_ms", 1000},
                                      {"deadline_ms", 2000}}}});
  running_gateway gw{cfg};
  const auto seen = h2_case("incomplete", gw.port(), {"/batch"});
  CHECK(seen["goaway"] == 11);
  CHECK(seen["ms"].get<double>() >= 700);
  CHECK(seen["ms"].get<double>() < 5000);
  CHECK(h2_metric(gw, "gather_http2_abuse_total{reason=\"incomplete_stream\"}") == 1);
  normal_request_answered(gw.port());
}

TEST_CASE("HTTP/2: a client that never opens its window or never reads stalls nobody else and is closed", "[front][h2][hostile]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {{"request_timeout_ms", 1500}})};
  // Never reads the socket: ten 1 MB answers fill every buffer on the way.
  child_process never_reads{"/usr/bin/python3", {h2_client_script, "socket_stall", std::to_string(gw.port()), "/big", "10"}};
  REQUIRE(never_reads.wait_for_line("sent"));
  normal_request_answered(gw.port()); // meanwhile
  // Reads, but its window stays 0: no DATA can be sent.
  const auto window = h2_case("window_stall", gw.port(), {"/p"});
  CHECK(window["goaway"] == 11);
  CHECK(window["ms"].get<double>() >= 1400);
  CHECK(eventually([&] { return h2_metric(gw, "gather_http2_abuse_total{reason=\"stalled\"}") == 2; }, 5000ms));
  normal_request_answered(gw.port());
}
