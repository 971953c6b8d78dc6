// Answers over HTTP/2 on the front: progressive (NDJSON, batch rows, SSE), compressed, CORS, TLS.
//
// HTTP/2 on the front (docs/gateway.md#http2, docs/security.md#http2): real clients against a real
// gateway on loopback. curl speaks h2c by prior knowledge and h2 over TLS by ALPN; the frame-level
// cases (when each DATA frame comes, clients that do not read) are python3-h2 clients in
// h2_client.py, over h2c or (with --tls) over TLS.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/decode.hpp"
#include "support/gateway_fixture.hpp"
#include "support/slow_gate.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"
#include "front/h2_test_support.hpp"

using namespace gather::test;
using json = nlohmann::json;
using namespace std::chrono_literals;
using namespace gather::test::h2_front_support;

namespace {

/// A progressive route: /s with `part` (required, at once) and `slow` (optional, never answers,
/// times out after 1500 ms).
json stream_route(const std::string& base) {
  return {{"path", "/s"}, {"deadline_ms", 4000},
          {"sections", json::array({section("part", base + "/item", 2000, {{"required", true}}),
                                    optional_section("slow", base + "/hang", 1500)})}};
}

/// The DATA frames h2_client.py's `ask` saw: when each came (ms after the request) and its bytes.
struct data_frame {
  double ms;
  std::string bytes;
};
std::vector<data_frame> frames_of(const json& asked) {
  std::vector<data_frame> out;
  for (const auto& f : asked["frames"]) {
    const auto hex = f["hex"].get<std::string>();
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out.push_back({f["ms"].get<double>(), std::move(bytes)});
  }
  return out;
}

/// NDJSON lines of a text, in order.
std::vector<json> ndjson_lines(const std::string& text) {
  std::vector<json> out;
  std::size_t at = 0;
  for (auto end = text.find('\n'); end != std::string::npos; at = end + 1, end = text.find('\n', at))
    out.push_back(json::parse(text.substr(at, end - at)));
  CHECK(at == text.size()); // every line ends with its newline
  return out;
}

/// GET `path` over TLS (HTTP/1.1: httplib offers no ALPN), the certificate verified.
httplib::Result h2tls_get(int port, const std::string& path) {
  httplib::SSLClient c{"127.0.0.1", port};
  c.set_ca_cert_path(tls_files::get().cert);
  c.enable_server_certificate_verification(true);
  c.set_read_timeout(10, 0);
  return c.Get(path);
}

} // namespace

TEST_CASE("HTTP/2: an NDJSON answer is HEADERS, then DATA frames as its sections end", "[front][h2][stream]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {}, json::array({stream_route(down.server.base_url())}))};
  const auto asked = h2_case("ask", gw.port(), {"GET", "/s", R"({"accept": "application/x-ndjson"})"});
  CHECK(asked["status"] == 200);
  CHECK(asked["ended"] == true);
  CHECK(asked["headers"]["content-type"] == "application/x-ndjson");
  CHECK_FALSE(asked["headers"].contains("transfer-encoding")); // HTTP/2 has its own framing
  CHECK_FALSE(asked["headers"].contains("content-length"));
  const auto frames = frames_of(asked);
  REQUIRE(frames.size() >= 2);
  // The first frame is the required section's line, sent as soon as it ended: long before the
  // slow section's timeout (1500 ms), whose line comes in a later frame.
  const auto first = ndjson_lines(frames.front().bytes);
  REQUIRE(first.size() == 1);
  CHECK(first[0]["section"] == "part");
  CHECK(frames.front().ms < 1000);
  std::string all;
  double slow_ms = 0;
  for (const auto& f : frames) {
    all += f.bytes;
    if (f.bytes.find(R"("section":"slow")") != std::string::npos)
      slow_ms = f.ms;
  }
  INFO("first frame " << frames.front().ms << " ms, slow line " << slow_ms << " ms");
  CHECK(slow_ms >= 1400);
  const auto lines = ndjson_lines(all);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1]["status"] == "timeout");
  CHECK(lines[2]["done"] == true);
  CHECK(lines[2]["degraded"] == true);
  // The line's data is the whole answer's (asked over HTTP/2 without the stream).
  const auto whole = h2_case("ask", gw.port(), {"GET", "/s"});
  std::string body;
  for (const auto& f : frames_of(whole))
    body += f.bytes;
  CHECK(json::parse(body)["data"]["part"] == lines[0]["data"]);
}

TEST_CASE("HTTP/2: batch rows are DATA frames as their calls end, then the counts", "[front][h2][stream][batch]") {
  test_server down;
  down.get(R"(/orders/(\w+)-(\d+))", [&down](const httplib::Request& req, httplib::Response& res) {
    down.delay(std::chrono::milliseconds{std::stoi(req.matches[2].str())});
    answer_json(res, {{"order", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
      "/orders", {{"url", down.base_url() + "/orders/{item}"}, {"timeout_ms", 3000}, {"concurrency", 8}})};
  const auto asked = h2_case("ask", gw.port(), {"POST", "/orders",
      R"({"accept": "application/x-ndjson", "content-type": "application/json"})",
      R"({"items": ["slow-800", "fast-5"]})"});
  CHECK(asked["status"] == 200);
  CHECK(asked["ended"] == true);
  CHECK(asked["headers"]["content-type"] == "application/x-ndjson");
  const auto frames = frames_of(asked);
  REQUIRE(frames.size() >= 2);
  // The fast row's line is a frame of its own, sent as its call ended, not with the slow one's.
  const auto first = ndjson_lines(frames.front().bytes);
  REQUIRE(first.size() == 1);
  CHECK(first[0]["index"] == 1);
  std::string all;
  double slow_ms = 0;
  for (const auto& f : frames) {
    all += f.bytes;
    if (f.bytes.find(R"("item":"slow-800")") != std::string::npos)
      slow_ms = f.ms;
  }
  INFO("first frame " << frames.front().ms << " ms, slow row " << slow_ms << " ms");
  CHECK(slow_ms >= 750);
  CHECK(frames.front().ms < slow_ms - 400);
  const auto lines = ndjson_lines(all);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1]["index"] == 0);
  CHECK(lines[1]["data"] == json{{"order", "slow"}});
  CHECK(lines[2] == json{{"done", true}, {"counts", {{"ok", 2}, {"timeout", 0}, {"error", 0}, {"rejected", 0}}},
                         {"degraded", false}});
}

TEST_CASE("HTTP/2: Server-Sent Events over h2c, read by curl as they come", "[front][h2][stream]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {}, json::array({stream_route(down.server.base_url())}))};
  const auto sse = curl({"--http2-prior-knowledge", "-N", "-H", "Accept: text/event-stream",
                         "http://127.0.0.1:" + std::to_string(gw.port()) + "/s"});
  CHECK(sse.version == "2");
  CHECK(sse.status == 200);
  CHECK(sse.body.rfind("event: section\ndata: {\"section\":\"part\"", 0) == 0);
  CHECK(sse.body.find("event: section\ndata: {\"section\":\"slow\"") != std::string::npos);
  CHECK(sse.body.find("event: done\ndata: {\"done\":true") != std::string::npos);
}

TEST_CASE("HTTP/2: br and gzip answers decode, a streamed gzip line as soon as its frame comes", "[front][h2][stream]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(), {{"compression", {{"min_bytes", 16}, {"encodings", {"br", "gzip"}}}}},
                               json::array({stream_route(down.server.base_url())}))};
  const auto asked = h2_case("ask", gw.port(), {"GET", "/s", R"({"accept": "application/x-ndjson", "accept-encoding": "gzip"})"});
  CHECK(asked["status"] == 200);
  CHECK(asked["headers"]["content-encoding"] == "gzip");
  const auto frames = frames_of(asked);
  REQUIRE_FALSE(frames.empty());
  stream_decoder gunzip{gather::content_coding::gzip};
  const auto first = gunzip.feed(frames.front().bytes);
  CHECK(frames.front().ms < 1000); // decodable long before the slow section's 1500 ms
  REQUIRE(ndjson_lines(first).size() == 1);
  CHECK(ndjson_lines(first)[0]["section"] == "part");
  std::string rest;
  for (std::size_t i = 1; i < frames.size(); ++i)
    rest += gunzip.feed(frames[i].bytes);
  CHECK(gunzip.ended());
  CHECK(ndjson_lines(first + rest).back()["done"] == true);

  const auto whole = h2_case("ask", gw.port(), {"GET", "/p", R"({"accept-encoding": "gzip;q=0.5, br"})"});
  CHECK(whole["headers"]["content-encoding"] == "br");
  std::string body;
  for (const auto& f : frames_of(whole))
    body += f.bytes;
  CHECK(json::parse(decode_whole(gather::content_coding::br, body))["data"]["part"]["name"] == "lamp");
}

TEST_CASE("HTTP/2: CORS preflight and simple request, and the metrics count each answer by its status", "[front][h2][cors]") {
  h2_downstream down;
  running_gateway gw{h2_config(down.server.base_url(),
                               {{"cors", {{"allow_origins", {"https://shop.example.com"}}, {"allow_headers", {"x-tenant"}}}}})};
  const auto preflight = h2_case("ask", gw.port(), {"OPTIONS", "/p",
      R"({"origin": "https://shop.example.com", "access-control-request-method": "GET", "access-control-request-headers": "X-Tenant"})"});
  CHECK(preflight["status"] == 204);
  CHECK(preflight["headers"]["access-control-allow-origin"] == "https://shop.example.com");
  CHECK(preflight["headers"]["access-control-allow-methods"] == "GET");
  CHECK(preflight["headers"]["access-control-allow-headers"] == "x-tenant");
  CHECK_FALSE(preflight["headers"].contains("content-length")); // none on a 204 (RFC 9110 8.6)
  const auto refused = h2_case("ask", gw.port(), {"OPTIONS", "/p",
      R"({"origin": "https://evil.example", "access-control-request-method": "GET"})"});
  CHECK(refused["status"] == 403);
  const auto simple = h2_case("ask", gw.port(), {"GET", "/p", R"({"origin": "https://shop.example.com"})"});
  CHECK(simple["status"] == 200);
  CHECK(simple["headers"]["access-control-allow-origin"] == "https://shop.example.com");
  CHECK(down.server.calls() == 1); // the preflights reached no downstream
  CHECK(h2_metric(gw, "gather_requests_total{route=\"/p\",code=\"204\"}") == 1);
  CHECK(h2_metric(gw, "gather_request_errors_total{route=\"/p\"}") == 2); // the 204 and the 403: neither is a 200
}

TEST_CASE("HTTP/2: a streamed answer whose client never opens its window is reset at its buffer bound and delays no one",
          "[front][h2][stream][hostile]") {
  h2_downstream down;
  const auto base = down.server.base_url();
  running_gateway gw{h2_config(base, {{"http2", {{"max_stream_buffer_bytes", 4096}}}}, json::array({
    stream_route(base),
    {{"path", "/bigs"}, {"deadline_ms", 4000},
     {"sections", json::array({optional_section("one", base + "/big", 3000), optional_section("two", base + "/big", 3000)})}}}))};
  child_process stalled{"/usr/bin/python3", {h2_client_script, "stream_stall", std::to_string(gw.port()), "/bigs",
                                             R"({"accept": "application/x-ndjson"})"}};
  REQUIRE(stalled.wait_for_line("open"));
  // Meanwhile another connection's progressive answer leaves as its first section ends.
  const auto other = h2_case("ask", gw.port(), {"GET", "/s", R"({"accept": "application/x-ndjson"})"});
  const auto frames = frames_of(other);
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.front().ms < 1000);
  CHECK(ndjson_lines(frames.front().bytes)[0]["section"] == "part");
  // Its first 1 MB line waits for a window that never opens; the second finds more than 4 KiB
  // waiting: the stream is reset, its connection stays.
  REQUIRE(stalled.wait_exit(15000ms) == 0);
  auto out = stalled.out();
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  const auto seen = json::parse(out.substr(out.rfind('\n') + 1));
  CHECK(seen["rst"] == 11); // ENHANCE_YOUR_CALM
  CHECK(seen["data_bytes"] == 0);
  CHECK(seen["goaway"].is_null());
  CHECK(h2_metric(gw, "gather_http2_abuse_total{reason=\"stalled\"}") == 1);
}

TEST_CASE("HTTP/2 over TLS: a progressive answer is DATA frames as its sections end, and a client gone mid-stream "
          "leaves nothing behind",
          "[front][h2][stream][tls]") {
  const auto& files = tls_files::get();
  test_server down;
  slow_gate gate; // destroyed before the server: a failed check never leaves the answer held
  down.get("/item", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"id", 7}, {"name", "lamp"}}); });
  down.get("/gated", [&gate](const httplib::Request&, httplib::Response& res) {
    gate.hold();
    answer_json(res, {{"late", true}});
  });
  down.start();
  silent_server silent; // /gone's slow section: never answers, its connection shows the cancel
  const auto base = down.base_url();
  const auto fast = section("part", base + "/item", 2000, {{"required", true}});
  running_gateway gw{h2_config(base, {{"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}}, json::array({
    // Deadline and timeout far beyond the 10 s the test waits for the first frame: an answer held
    // back until its end fails that wait, not a later check.
    {{"path", "/s"}, {"deadline_ms", 20000}, {"sections", json::array({fast, optional_section("slow", base + "/gated", 20000)})}},
    {{"path", "/gone"}, {"deadline_ms", 8000},
     {"sections", json::array({fast, optional_section("slow", silent.base_url() + "/x", 6000)})}}}))};
  const auto port = std::to_string(gw.port());
  const std::string ndjson_accept = R"({"accept": "application/x-ndjson"})";

  // 1. The answer in parts. The client (h2 by ALPN, the certificate verified) says when each DATA
  // frame comes; the slow section's downstream holds its answer until the first frame has come.
  child_process reader{"/usr/bin/python3", {h2_client_script, "--tls", files.cert, "ask", port, "GET", "/s", ndjson_accept}};
  REQUIRE(reader.wait_for_line("data 1 "));
  REQUIRE(eventually([&] { return gate.entered() == 1; })); // the slow call is held, not answered
  gate.release();
  REQUIRE(reader.wait_exit(std::chrono::milliseconds{15000}) == 0);
  auto out = reader.out();
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  const auto asked = json::parse(out.substr(out.rfind('\n') + 1));
  CHECK(asked["status"] == 200);
  CHECK(asked["ended"] == true);
  CHECK(asked["reset"].is_null());
  const auto& headers = asked["headers"];
  CHECK(headers["content-type"] == "application/x-ndjson");
  CHECK(headers["cache-control"] == "no-cache");
  CHECK_FALSE(headers.contains("content-length")); // the DATA frames end it
  CHECK_FALSE(headers.contains("transfer-encoding"));
  const auto request_id = headers.value("x-request-id", "");
  CHECK_FALSE(request_id.empty());
  const auto frames = frames_of(asked);
  REQUIRE(frames.size() >= 2);
  // The first frame is the required section's line alone, as the contract writes it (section 12):
  // it came while the slow section's answer was still held.
  const auto first = ndjson_lines(frames.front().bytes);
  REQUIRE(first.size() == 1);
  CHECK(first[0]["section"] == "part");
  CHECK(first[0]["status"] == "ok");
  CHECK(first[0]["source"] == "live");
  CHECK(first[0]["attempts"] == 1);
  CHECK(first[0]["ms"].is_number());
  CHECK(first[0]["data"] == json{{"id", 7}, {"name", "lamp"}});
  CHECK(first[0].size() == 6);
  // Every frame is whole lines; only the last ends the stream, and it carries the last line.
  std::vector<json> lines;
  for (std::size_t i = 0; i < asked["frames"].size(); ++i) {
    INFO("frame " << i);
    CHECK(asked["frames"][i]["end_stream"] == (i + 1 == asked["frames"].size()));
    for (auto& line : ndjson_lines(frames[i].bytes))
      lines.push_back(std::move(line));
  }
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == json{{"section", "slow"}, {"status", "ok"}, {"source", "live"}, {"attempts", 1},
                         {"ms", lines[1]["ms"]}, {"data", {{"late", true}}}});
  CHECK(lines[2] == json{{"done", true}, {"degraded", false}, {"warnings", json::array()}, {"request_id", request_id}});
  CHECK(ndjson_lines(frames.back().bytes).back() == lines[2]);

  // 2. A client gone mid-stream: killed after its first line, while its slow call runs (no
  // RST_STREAM, no GOAWAY, no TLS close_notify: the socket just closes).
  {
    child_process leaver{"/usr/bin/python3", {h2_client_script, "--tls", files.cert, "ask", port, "GET", "/gone", ndjson_accept}};
    REQUIRE(leaver.wait_for_line("data 1 "));
    REQUIRE(eventually([&] { return silent.accepted() == 1; }));
    leaver.signal(SIGKILL);
    CHECK_FALSE(leaver.wait_exit()); // ended by the signal
  }
  CHECK(eventually([&] { return silent.closed_by_peer() == 1; }, std::chrono::milliseconds{3000})); // its call cancelled
  json actors;
  CHECK(eventually([&] {
    const auto r = h2tls_get(gw.port(), "/debug/actors");
    if (!r)
      return false;
    actors = json::parse(r->body);
    return actors["h2_connections"] == 0 && actors["inflight_requests"] == 0;
  }));
  INFO(actors.dump());
  CHECK(actors["h2_streams"] == 0);
  CHECK(actors["coordinators"] == 0);
  CHECK(actors["workers"] == 0);
  CHECK(actors["downstream_inflight"] == 0);
  const auto metrics = h2tls_get(gw.port(), "/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("gather_requests_total{route=\"/gone\",code=\"499\"} 1\n") != std::string::npos);

  // 3. The gateway serves on: a following progressive answer over h2 + TLS, read by curl.
  const auto after = curl({"--http2", "--cacert", files.cert, "-N", "-H", "Accept: application/x-ndjson",
                           "https://127.0.0.1:" + port + "/s"});
  CHECK(after.version == "2");
  CHECK(after.status == 200);
  const auto after_lines = ndjson_lines(after.body);
  REQUIRE(after_lines.size() == 3);
  CHECK(after_lines[2]["done"] == true);
  CHECK(after_lines[2]["degraded"] == false);
  const auto counted = h2tls_get(gw.port(), "/metrics");
  REQUIRE(counted);
  CHECK(counted->body.find("gather_connections_total{proto=\"h2\"} 3\n") != std::string::npos);
}
