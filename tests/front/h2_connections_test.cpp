// HTTP/2 connections on the front: h2c and ALPN, concurrent and reset streams, limits, GOAWAY.
//
// HTTP/2 on the front (docs/gateway.md#http2, docs/security.md#http2): real clients against a real
// gateway on loopback. curl speaks h2c by prior knowledge and h2 over TLS by ALPN; the frame-level
// cases (resets, refused streams, a GOAWAY) are python3-h2 clients in h2_client.py.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"
#include "front/h2_test_support.hpp"

using namespace gather::test;
using json = nlohmann::json;
using namespace std::chrono_literals;
using namespace gather::test::h2_front_support;

namespace {

/// An answer's body without the times in it (two requests never take the same milliseconds).
json without_times(json body) {
  if (body.contains("sections"))
    for (auto& [name, part] : body["sections"].items())
      part.erase("ms");
  return body;
}

} // namespace

TEST_CASE("HTTP/2: h2c by prior knowledge gets the answers HTTP/1.1 gets, on the same port", "[front][h2]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url())};
  const std::string base = "http://127.0.0.1:" + std::to_string(gw.port());
  for (const std::string path : {"/p", "/nowhere", "/p?x=1"}) {
    const auto h1 = curl({"--http1.1", "-H", "X-Request-Id: same-id", base + path});
    const auto h2 = curl({"--http2-prior-knowledge", "-H", "X-Request-Id: same-id", base + path});
    INFO(path);
    CHECK(h1.version == "1.1");
    CHECK(h2.version == "2");
    CHECK(h2.status == h1.status);
    CHECK(without_times(json::parse(h2.body)) == without_times(json::parse(h1.body)));
  }
  const auto post = curl({"--http2-prior-knowledge", "-X", "POST", base + "/p"});
  CHECK(post.status == 405);
  CHECK(h2_metric(gw, "gather_connections_total{proto=\"h2\"}") == 4);
  CHECK(h2_metric(gw, "gather_connections_total{proto=\"http/1.1\"}") >= 3);
}

TEST_CASE("HTTP/2: over TLS, ALPN chooses h2 or http/1.1 on one port, and the answers agree", "[front][h2][tls]") {
  const auto& files = tls_files::get();
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {{"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}})};
  const std::string url = "https://127.0.0.1:" + std::to_string(gw.port()) + "/p";
  const auto h2 = curl({"--http2", "--cacert", files.cert, "-H", "X-Request-Id: tls-id", url});
  const auto h1 = curl({"--http1.1", "--cacert", files.cert, "-H", "X-Request-Id: tls-id", url});
  CHECK(h2.version == "2");
  CHECK(h1.version == "1.1");
  CHECK(h2.status == 200);
  CHECK(without_times(json::parse(h2.body)) == without_times(json::parse(h1.body)));
  // A client that offers no ALPN is served HTTP/1.1.
  auto https = httplib::SSLClient("127.0.0.1", gw.port());
  https.enable_server_certificate_verification(false);
  const auto r = https.Get("/p");
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("HTTP/2: 50 concurrent streams on one connection finish in about one section's time", "[front][h2]") {
  h2_downstream down{300ms};
  running_gateway gw{h2_config(down.server.base_url(), {{"max_inflight", 256}})};
  const auto all = h2_case("get", gw.port(), {"/p", "50"});
  for (const auto& status : all["statuses"])
    CHECK(status == 200);
  CHECK(all["statuses"].size() == 50);
  // One after the other they would take 15 s; together about 300 ms (generous on a loaded machine).
  CHECK(all["ms"].get<double>() < 2500);
  CHECK(json::parse(all["bodies"][0].get<std::string>())["data"]["part"]["name"] == "lamp");
}

TEST_CASE("HTTP/2: a reset stream cancels its downstream call and the connection goes on", "[front][h2]") {
  h2_downstream down;
  silent_server hung;
  running_gateway gw{h2_config(down.server.base_url(), {}, json::array({
    {{"path", "/hang"}, {"deadline_ms", 5000}, {"sections", json::array({section("slow", hung.base_url() + "/x", 5000, {{"required", true}})})}}}))};
  const auto seen = h2_case("reset", gw.port(), {"/hang", "/p"});
  CHECK(seen["inflight_before_reset"] == 1);
  CHECK(seen["after"]["status"] == 200); // the same connection, after the reset
  CHECK(seen["goaway"].is_null());
  CHECK(eventually([&] { return hung.closed_by_peer() == 1; }, 3000ms));
  CHECK(h2_metric(gw, "gather_requests_total{route=\"/hang\",code=\"499\"}") == 1);
}

TEST_CASE("HTTP/2: /debug/actors counts h2 connections and their open streams", "[front][h2]") {
  h2_downstream down;
  silent_server hung;
  running_gateway gw{h2_config(down.server.base_url(), {}, json::array({
    {{"path", "/hang"}, {"deadline_ms", 5000}, {"sections", json::array({section("slow", hung.base_url() + "/x", 5000, {{"required", true}})})}}}))};
  // A python3-h2 client holds a hanging stream open while the test reads /debug/actors over HTTP/1.1.
  child_process holder{"/usr/bin/python3", {h2_client_script, "socket_stall", std::to_string(gw.port()), "/hang", "3"}};
  REQUIRE(holder.wait_for_line("sent"));
  json actors;
  CHECK(eventually([&] {
    actors = json::parse(gw.get("/debug/actors")->body);
    return actors["h2_streams"] == 3;
  }, 3000ms));
  CHECK(actors["h2_connections"] == 1);
}

TEST_CASE("HTTP/2: more streams than max_concurrent_streams are refused as RFC 9113 says", "[front][h2]") {
  h2_downstream down;
  silent_server hung;
  running_gateway gw{h2_config(down.server.base_url(), {{"http2", {{"max_concurrent_streams", 4}}}}, json::array({
    {{"path", "/hang"}, {"deadline_ms", 5000}, {"sections", json::array({section("slow", hung.base_url() + "/x", 5000, {{"required", true}})})}}}))};
  const auto seen = h2_case("refuse", gw.port(), {"/hang", "10", "4"});
  CHECK(seen["refused"] == 6);
  for (const auto& code : seen["codes"]) // REFUSED_STREAM or PROTOCOL_ERROR (RFC 9113 5.1.2)
    CHECK((code == 7 || code == 1));
  normal_request_answered(gw.port());
}

TEST_CASE("HTTP/2: streams a client opens after its own GOAWAY are refused, the one before it is answered", "[front][h2]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url())};
  const auto seen = h2_case("goaway_then_requests", gw.port(), {"/p"});
  INFO(seen.dump());
  CHECK(seen["answered"] == json::array({1}));
  for (const auto& [stream, code] : seen["reset"].items())
    CHECK(code == 7); // REFUSED_STREAM: safe for the client to send again elsewhere
  CHECK(down.server.calls() == 1);
  normal_request_answered(gw.port());
}
