// Progressive answers over real sockets, read by a raw client that times every chunk as it
// arrives (tests/support/stream_client.hpp): the head leaves once the required sections have
// ended, lines come in completion order with the whole answer's data, the deadline and a client's
// hang-up hold, Server-Sent Events carry the same lines, batch rows stream as their calls end.
// Timing margins are wide: the machine is shared and loaded.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/stream_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

const std::string ndjson = "Accept: application/x-ndjson";

/// Downstreams: /base after 20 ms, /hang never (within the test), /d/N after N ms, /fail 503.
void serve_downstreams(test_server& down) {
  down.get("/base", [&down](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{20});
    answer_json(res, {{"id", "42"}, {"stock", 3}, {"title", "a product"}});
  });
  down.get("/hang", [&down](const httplib::Request&, httplib::Response& res) {
    down.hang();
    answer_json(res, {{"late", true}});
  });
  down.get(R"(/d/(\d+))", [&down](const httplib::Request& req, httplib::Response& res) {
    down.delay(milliseconds{std::stoi(req.matches[1].str())});
    answer_json(res, {{"waited", std::stoi(req.matches[1].str())}, {"text", "line\nbreak"}});
  });
  down.get("/fail", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"e", 1}}, 503); });
  down.start();
}

/// Every JSON line of a stream, with the time each arrived.
std::vector<std::pair<json, steady_clock::time_point>> lines_of(stream_client& c, milliseconds limit = milliseconds{8000}) {
  std::vector<std::pair<json, steady_clock::time_point>> out;
  while (auto piece = c.next_chunk(limit)) {
    REQUIRE(piece->bytes.back() == '\n');
    out.emplace_back(json::parse(piece->bytes), piece->at);
  }
  REQUIRE(c.ended());
  return out;
}

} // namespace

TEST_CASE("stream: the head leaves when the required section has ended, not when a slow optional one does",
          "[stream]") {
  test_server down;
  serve_downstreams(down);
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/base", 2000, {{"required", true}}),
       optional_section("slow", down.base_url() + "/hang", 1500)},
      4000)};
  stream_client c{gw.port(), get_request("/p/42", {ndjson})};
  REQUIRE(c.read_head());
  CHECK(c.status == 200);
  CHECK(c.header("content-type") == "application/x-ndjson");
  CHECK(c.header("transfer-encoding") == "chunked");
  CHECK_FALSE(c.header("x-request-id").empty());
  const auto first_byte_ms = ms_between(c.sent, c.first_byte);
  const auto lines = lines_of(c);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].first["section"] == "base");
  CHECK(lines[1].first["section"] == "slow");
  CHECK(lines[1].first["status"] == "timeout");
  CHECK(lines[2].first["done"] == true);
  const auto base_ms = ms_between(c.sent, lines[0].second);
  const auto slow_ms = ms_between(c.sent, lines[1].second);
  INFO("first byte " << first_byte_ms << " ms, base line " << base_ms << " ms, slow line " << slow_ms << " ms");
  CHECK(first_byte_ms < 1000); // base takes 20 ms; the slow section 1500
  CHECK(base_ms < 1000);
  CHECK(slow_ms >= 1400);
}

TEST_CASE("stream: several Accept lines are one list (RFC 9110 5.3)", "[stream]") {
  test_server down;
  serve_downstreams(down);
  running_gateway gw{route_config_json("/p/{id}", {section("base", down.base_url() + "/base", 2000, {{"required", true}})}, 3000)};
  stream_client c{gw.port(), get_request("/p/42", {"Accept: text/html;q=0.9", "Accept: application/x-ndjson"})};
  REQUIRE(c.read_head());
  CHECK(c.header("content-type") == "application/x-ndjson");
  CHECK(lines_of(c).back().first["done"] == true);
}

TEST_CASE("stream: lines in completion order carry the whole answer's data", "[stream]") {
  test_server down;
  serve_downstreams(down);
  const auto cfg = route_config_json(
      "/p/{id}",
      {optional_section("c", down.base_url() + "/d/300", 3000), optional_section("a", down.base_url() + "/d/10", 3000),
       optional_section("b", down.base_url() + "/d/150", 3000), optional_section("f", down.base_url() + "/fail", 3000),
       section("s", down.base_url() + "/d/5", 3000, {{"fallback_from", "c.waited"}})},
      4000);
  running_gateway gw{cfg};
  stream_client c{gw.port(), get_request("/p/1", {ndjson})};
  REQUIRE(c.read_head());
  const auto lines = lines_of(c);
  std::vector<std::string> order;
  for (const auto& [line, at] : lines)
    order.push_back(line.contains("section") ? line["section"].get<std::string>() : "done");
  // f fails at once; s is ok (its fallback_from is not needed); a, b, c by their delays.
  REQUIRE(order.size() == 6);
  CHECK(order.back() == "done");
  const std::vector<std::string> timed{order[0], order[1], order[2], order[3], order[4]};
  CHECK(std::find(timed.begin(), timed.end(), "a") < std::find(timed.begin(), timed.end(), "b"));
  CHECK(std::find(timed.begin(), timed.end(), "b") < std::find(timed.begin(), timed.end(), "c"));
  CHECK(order[4] == "c");

  const auto whole = body_of(gw.get("/p/1"));
  for (const auto& [line, at] : lines) {
    if (!line.contains("section")) {
      CHECK(line["degraded"] == whole["degraded"]);
      CHECK(line["warnings"] == whole["warnings"]);
      continue;
    }
    const auto name = line["section"].get<std::string>();
    INFO(name);
    CHECK(line["data"] == whole["data"][name]);
    CHECK(line["status"] == whole["sections"][name]["status"]);
    CHECK(line["source"] == whole["sections"][name]["source"]);
    CHECK(line["attempts"] == whole["sections"][name]["attempts"]);
  }
}

TEST_CASE("stream: a required section that fails first gives the ordinary error answer", "[stream]") {
  test_server down;
  serve_downstreams(down);
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/fail", 2000, {{"required", true}}),
       optional_section("slow", down.base_url() + "/hang", 3000)},
      4000)};
  stream_client c{gw.port(), get_request("/p/42", {ndjson})};
  REQUIRE(c.read_head());
  CHECK(c.status == 503);
  CHECK(c.header("content-type") == "application/json");
  CHECK(c.header("transfer-encoding").empty());
  CHECK(json::parse(c.raw_body())["error"] == "upstream_unavailable");
  CHECK(ms_between(c.sent, c.head_at) < 2000);
}

TEST_CASE("stream: at the deadline the running sections get their timeout lines, then the last line", "[stream]") {
  test_server down;
  serve_downstreams(down);
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/base", 2000, {{"required", true}}),
       optional_section("slow", down.base_url() + "/hang", 5000)},
      500)};
  stream_client c{gw.port(), get_request("/p/42", {ndjson})};
  REQUIRE(c.read_head());
  const auto lines = lines_of(c);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1].first["section"] == "slow");
  CHECK(lines[1].first["status"] == "timeout");
  CHECK(lines[1].first["source"] == "fallback");
  CHECK(lines[2].first == json{{"done", true}, {"degraded", true}, {"warnings", {"slow_timeout"}},
                               {"request_id", c.header("x-request-id")}});
  const auto done_ms = ms_between(c.sent, lines[2].second);
  INFO("the last line after " << done_ms << " ms (deadline 500)");
  CHECK(done_ms >= 450);
  CHECK(done_ms < 1500);
}

TEST_CASE("stream: a client that hangs up mid-answer cancels the calls still running", "[stream]") {
  test_server down;
  serve_downstreams(down);
  silent_server silent;
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/base", 2000, {{"required", true}}),
       optional_section("slow", silent.base_url() + "/x", 8000)},
      9000)};
  {
    stream_client c{gw.port(), get_request("/p/42", {ndjson})};
    REQUIRE(c.read_head());
    const auto first = c.next_chunk();
    REQUIRE(first);
    CHECK(json::parse(first->bytes)["section"] == "base");
    REQUIRE(eventually([&] { return silent.accepted() == 1; }));
    c.connection().reset();
  }
  CHECK(eventually([&] { return silent.closed_by_peer() == 1; }, milliseconds{3000}));
  // Counted as the client's: 499, and the gateway serves on.
  CHECK(eventually([&] {
    auto m = gw.get("/metrics");
    return m && m->body.find("gather_requests_total{route=\"/p/{id}\",code=\"499\"} 1") != std::string::npos;
  }));
  auto metrics = gw.get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("gather_streamed_total{route=\"/p/{id}\",format=\"ndjson\"} 1") != std::string::npos);
  CHECK(metrics->body.find("gather_inflight_requests 0") != std::string::npos);
}

TEST_CASE("stream: Server-Sent Events carry the same lines, parsed by the test", "[stream]") {
  test_server down;
  serve_downstreams(down);
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/base", 2000, {{"required", true}}),
       optional_section("b", down.base_url() + "/d/50", 2000), optional_section("f", down.base_url() + "/fail", 2000)},
      3000)};
  stream_client sse{gw.port(), get_request("/p/42", {"Accept: text/event-stream"})};
  REQUIRE(sse.read_head());
  CHECK(sse.header("content-type") == "text/event-stream");
  CHECK(sse.header("cache-control") == "no-cache");
  // The event stream format (HTML Living Standard 9.2.6): fields per line, an event per blank line.
  std::vector<std::pair<std::string, json>> events;
  std::string text = sse.rest();
  REQUIRE(sse.ended());
  for (std::size_t at = 0; at < text.size();) {
    const auto end = text.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    std::string name = "message", data;
    for (std::size_t line = at; line < end;) {
      const auto eol = std::min(text.find('\n', line), end);
      const auto field = text.substr(line, eol - line);
      if (field.rfind("event: ", 0) == 0)
        name = field.substr(7);
      else if (field.rfind("data: ", 0) == 0)
        data += (data.empty() ? "" : "\n") + field.substr(6);
      else
        FAIL("unexpected field: " << field);
      line = eol + 1;
    }
    events.emplace_back(name, json::parse(data));
    at = end + 2;
  }
  REQUIRE(events.size() == 4);
  CHECK(events.back().first == "done");
  CHECK(events.back().second["warnings"] == json{"f_error"});
  stream_client nd{gw.port(), get_request("/p/42", {ndjson})};
  REQUIRE(nd.read_head());
  const auto lines = lines_of(nd);
  REQUIRE(lines.size() == events.size());
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    CHECK(events[i].first == "section");
    auto a = events[i].second, b = lines[i].first;
    a.erase("ms");
    b.erase("ms");
    CHECK(a == b);
  }
}

TEST_CASE("stream: batch rows as their calls end, then the counts", "[stream][batch]") {
  test_server down;
  down.get(R"(/orders/(\w+)-(\d+))", [&down](const httplib::Request& req, httplib::Response& res) {
    down.delay(milliseconds{std::stoi(req.matches[2].str())});
    answer_json(res, {{"order", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
      "/orders", {{"url", down.base_url() + "/orders/{item}"}, {"timeout_ms", 2000}, {"concurrency", 8}})};
  const std::string body = R"({"items": ["slow-400", "fast-5", "mid-200", "fast-5"]})";
  stream_client c{gw.port(), "POST /orders HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n"
                             "Content-Type: application/json\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body};
  REQUIRE(c.read_head());
  CHECK(c.status == 200);
  CHECK(c.header("content-type") == "application/x-ndjson");
  const auto lines = lines_of(c);
  REQUIRE(lines.size() == 5);
  std::vector<int> indexes;
  for (std::size_t i = 0; i < 4; ++i)
    indexes.push_back(lines[i].first["index"].get<int>());
  CHECK(indexes == std::vector<int>{1, 3, 2, 0}); // rows 1 and 3 share one call
  CHECK(lines[0].first == json{{"index", 1}, {"item", "fast-5"}, {"status", "ok"}, {"data", {{"order", "fast"}}}, {"attempts", 1}});
  CHECK(lines[4].first == json{{"done", true}, {"counts", {{"ok", 4}, {"timeout", 0}, {"error", 0}, {"rejected", 0}}},
                               {"degraded", false}});
}
