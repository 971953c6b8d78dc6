// The spans a request exports: SERVER and CLIENT spans, hedges, batches, and sampling.
//
// Tracing end to end: a real gateway, real downstreams and a loopback OTLP/HTTP receiver. The
// spans a request produces, the traceparent each downstream call carries, and sampling.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gather/tracing/traceparent.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"
#include "tracing/tracing_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using namespace gather::test::tracing_support;

namespace {

/// A loopback OTLP/HTTP receiver: POST /v1/traces, every span kept with its service name.
class otlp_receiver {
public:
  otlp_receiver() {
    server_.raw().Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res) {
      auto doc = json::parse(req.body, nullptr, false);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        content_types_.insert(req.get_header_value("Content-Type"));
        ++posts_;
        if (!doc.is_discarded())
          for (auto& rs : doc["resourceSpans"]) {
            const auto service = rs["resource"]["attributes"][0]["value"]["stringValue"];
            for (auto& ss : rs["scopeSpans"])
              for (auto& span : ss["spans"]) {
                span["service"] = service;
                spans_.push_back(span);
              }
          }
      }
      res.status = 200;
      res.set_content("{}", "application/json");
    });
    server_.start();
  }
  std::string endpoint() const { return server_.base_url() + "/v1/traces"; }
  std::vector<json> spans_of(const std::string& trace) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<json> out;
    for (const auto& s : spans_)
      if (s["traceId"] == trace)
        out.push_back(s);
    return out;
  }
  std::set<std::string> content_types() {
    std::lock_guard<std::mutex> lock(mutex_);
    return content_types_;
  }

private:
  test_server server_;
  std::mutex mutex_;
  std::vector<json> spans_;
  std::set<std::string> content_types_;
  int posts_ = 0;
};

/// An attribute's value object ({"stringValue": ...} and so on); null when absent.
json attribute(const json& span, const std::string& key) {
  for (const auto& a : span["attributes"])
    if (a["key"] == key)
      return a["value"];
  return nullptr;
}

} // namespace

TEST_CASE("tracing: an inbound trace gets a SERVER span and one CLIENT span per call, each call its own traceparent",
          "[tracing]") {
  otlp_receiver receiver;
  seen_headers seen;
  test_server down;
  std::atomic<int> b_calls{0};
  down.get(R"(/a/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    answer_json(res, {{"a", 1}});
  });
  down.get(R"(/b/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    if (b_calls++ == 0)
      return answer_json(res, {{"error", "first call fails"}}, 503); // retryable
    answer_json(res, {{"b", 2}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p/{id}",
    {section("a", down.base_url() + "/a/{id}", 1000, {{"required", true}}),
     section("b", down.base_url() + "/b/{id}", 1000, {{"retry", {{"attempts", 2}, {"backoff_ms", 0}}}, {"fallback", 0}})},
    3000, {{"tracing", tracing_keys(receiver.endpoint())}})};

  auto r = gw.get("/p/7", {{"traceparent", inbound_traceparent()}});
  REQUIRE(r);
  REQUIRE(r->status == 200);

  REQUIRE(eventually([&] { return receiver.spans_of(inbound_trace).size() >= 4; }, milliseconds{10000}));
  auto spans = receiver.spans_of(inbound_trace);
  REQUIRE(spans.size() == 4);
  CHECK(receiver.content_types() == std::set<std::string>{"application/json"});

  json server;
  std::vector<json> clients;
  for (const auto& s : spans) {
    CHECK(s["service"] == "test-gateway");
    if (s["kind"] == 2)
      server = s;
    else
      clients.push_back(s);
  }
  REQUIRE(server.is_object());
  CHECK(server["parentSpanId"] == inbound_parent);
  CHECK(server["name"] == "/p/{id}");
  CHECK(attribute(server, "http.request.method") == json{{"stringValue", "GET"}});
  CHECK(attribute(server, "http.route") == json{{"stringValue", "/p/{id}"}});
  CHECK(attribute(server, "http.response.status_code") == json{{"intValue", "200"}});
  CHECK(attribute(server, "gather.degraded") == json{{"boolValue", false}});
  CHECK(std::stoll(server["endTimeUnixNano"].get<std::string>()) >=
        std::stoll(server["startTimeUnixNano"].get<std::string>()));

  REQUIRE(clients.size() == 3);
  std::map<std::pair<std::string, std::string>, json> by_section_attempt;
  std::set<std::string> client_ids;
  for (const auto& c : clients) {
    CHECK(c["kind"] == 3);
    CHECK(c["parentSpanId"] == server["spanId"]);
    CHECK(c["name"] == attribute(c, "gather.section")["stringValue"]);
    by_section_attempt[{c["name"], attribute(c, "gather.attempt")["intValue"]}] = c;
    client_ids.insert(c["spanId"].get<std::string>());
  }
  REQUIRE(by_section_attempt.count({"a", "1"}) == 1);
  REQUIRE(by_section_attempt.count({"b", "1"}) == 1);
  REQUIRE(by_section_attempt.count({"b", "2"}) == 1);
  const auto& b1 = by_section_attempt[{"b", "1"}];
  CHECK(attribute(b1, "gather.status") == json{{"stringValue", "error"}});
  CHECK(attribute(b1, "http.response.status_code") == json{{"intValue", "503"}});
  CHECK(b1["status"]["code"] == 2);
  const auto& b2 = by_section_attempt[{"b", "2"}];
  CHECK(attribute(b2, "gather.status") == json{{"stringValue", "ok"}});
  CHECK(attribute(b2, "http.response.status_code") == json{{"intValue", "200"}});
  CHECK(attribute(by_section_attempt[{"a", "1"}], "gather.status") == json{{"stringValue", "ok"}});

  // Every call carried the request's trace, its own CLIENT span id and the sampled flag.
  const auto headers = seen.all();
  REQUIRE(headers.size() == 3);
  std::set<std::string> header_ids;
  for (const auto& h : headers) {
    INFO(h);
    REQUIRE(gather::parse_traceparent(h));
    CHECK(h.substr(0, 36) == "00-" + inbound_trace + "-");
    CHECK(h.substr(53) == "01");
    header_ids.insert(span_id_in(h));
  }
  CHECK(header_ids == client_ids);
}

TEST_CASE("tracing: a hedge call has a CLIENT span of its own, and the cancelled loser says so", "[tracing]") {
  otlp_receiver receiver;
  seen_headers seen;
  test_server down;
  std::atomic<int> calls{0};
  down.get("/h", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    if (calls++ == 0)
      down.delay(milliseconds{1500}); // the first call is slow: the hedge after 50 ms wins
    answer_json(res, {{"h", 1}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {section("h", down.base_url() + "/h", 2000, {{"required", true}, {"hedge", {{"after_ms", 50}}}})},
    3000, {{"tracing", tracing_keys(receiver.endpoint())}})};
  auto r = gw.get("/p", {{"traceparent", inbound_traceparent()}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(eventually([&] { return receiver.spans_of(inbound_trace).size() >= 3; }, milliseconds{10000}));
  auto spans = receiver.spans_of(inbound_trace);
  REQUIRE(spans.size() == 3);
  std::map<std::string, json> by_attempt;
  std::set<std::string> client_ids;
  for (const auto& s : spans)
    if (s["kind"] == 3) {
      by_attempt[attribute(s, "gather.attempt")["intValue"]] = s;
      client_ids.insert(s["spanId"].get<std::string>());
    }
  REQUIRE(by_attempt.size() == 2);
  CHECK(attribute(by_attempt["1"], "gather.status") == json{{"stringValue", "cancelled"}});
  CHECK(attribute(by_attempt["2"], "gather.status") == json{{"stringValue", "ok"}});
  std::set<std::string> header_ids;
  for (const auto& h : seen.all())
    header_ids.insert(span_id_in(h));
  CHECK(header_ids == client_ids); // each call carried its own span id
}

TEST_CASE("tracing: a batch call is a CLIENT span of the batch's SERVER span", "[tracing]") {
  otlp_receiver receiver;
  seen_headers seen;
  test_server down;
  down.get(R"(/i/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    answer_json(res, {{"item", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
    "/b", {{"url", down.base_url() + "/i/{item}"}, {"timeout_ms", 1000}},
    {{"tracing", tracing_keys(receiver.endpoint())}})};
  auto r = gw.post("/b", json{{"items", {"x", "y"}}}.dump(), {{"traceparent", inbound_traceparent()}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  REQUIRE(eventually([&] { return receiver.spans_of(inbound_trace).size() >= 3; }, milliseconds{10000}));
  auto spans = receiver.spans_of(inbound_trace);
  REQUIRE(spans.size() == 3);
  json server;
  std::set<std::string> client_ids;
  for (const auto& s : spans)
    if (s["kind"] == 2)
      server = s;
  REQUIRE(server.is_object());
  CHECK(attribute(server, "http.request.method") == json{{"stringValue", "POST"}});
  for (const auto& s : spans)
    if (s["kind"] == 3) {
      CHECK(s["parentSpanId"] == server["spanId"]);
      CHECK(s["name"] == "batch");
      CHECK(attribute(s, "gather.attempt") == json{{"intValue", "1"}});
      client_ids.insert(s["spanId"].get<std::string>());
    }
  std::set<std::string> header_ids;
  for (const auto& h : seen.all())
    header_ids.insert(span_id_in(h));
  CHECK(header_ids == client_ids);
}

TEST_CASE("tracing: the caller's flag is honoured both ways and the ratio decides only new traces", "[tracing]") {
  otlp_receiver receiver;
  seen_headers seen;
  test_server down;
  down.get("/a", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    answer_json(res, {{"a", 1}});
  });
  down.start();
  running_gateway gw{route_config_json("/p", {section("a", down.base_url() + "/a", 1000, {{"required", true}})}, 2000,
                                       {{"tracing", tracing_keys(receiver.endpoint(), {{"sample_ratio", 0}})}})};
  // Not sampled by the caller, then a new trace under ratio 0, then sampled by the caller.
  REQUIRE(gw.get("/p", {{"traceparent", inbound_traceparent(false)}})->status == 200);
  REQUIRE(gw.get("/p", {{"traceparent", "00-zz-bad"}})->status == 200);
  const std::string sampled_trace = "0af7651916cd43dd8448eb211c80319c";
  REQUIRE(gw.get("/p", {{"traceparent", "00-" + sampled_trace + "-b7ad6b7169203331-01"}})->status == 200);
  REQUIRE(eventually([&] { return receiver.spans_of(sampled_trace).size() >= 2; }, milliseconds{10000}));
  CHECK(receiver.spans_of(inbound_trace).empty());

  const auto headers = seen.all();
  REQUIRE(headers.size() == 3);
  CHECK(headers[0].substr(0, 36) == "00-" + inbound_trace + "-");
  CHECK(headers[0].substr(53) == "00");
  auto fresh = gather::parse_traceparent(headers[1]);
  REQUIRE(fresh); // an invalid inbound value starts a new trace
  CHECK(std::string(fresh->trace_id.begin(), fresh->trace_id.end()) != inbound_trace);
  CHECK_FALSE(fresh->sampled);
  CHECK(receiver.spans_of(std::string(fresh->trace_id.begin(), fresh->trace_id.end())).empty());
  CHECK(headers[2].substr(53) == "01");
}
