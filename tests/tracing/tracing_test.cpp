// Tracing end to end: a real gateway, real downstreams and a loopback OTLP/HTTP receiver.
// The spans a request produces, the traceparent each downstream call carries, sampling, the
// request log's trace_id, and a collector that is down or hangs changing nothing but counters.
#include <catch2/catch.hpp>

#include <csignal>
#include <map>
#include <mutex>
#include <regex>
#include <set>

#include <unistd.h>

#include "gather/tracing/traceparent.hpp"
#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

const std::string inbound_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string inbound_parent = "00f067aa0ba902b7";

std::string inbound_traceparent(bool sampled = true) {
  return "00-" + inbound_trace + "-" + inbound_parent + (sampled ? "-01" : "-00");
}

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

/// The traceparent values downstream handlers saw, in arrival order.
struct seen_headers {
  std::mutex mutex;
  std::vector<std::string> values;
  void add(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mutex);
    values.push_back(req.get_header_value("traceparent"));
  }
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> lock(mutex);
    return values;
  }
};

/// An attribute's value object ({"stringValue": ...} and so on); null when absent.
json attribute(const json& span, const std::string& key) {
  for (const auto& a : span["attributes"])
    if (a["key"] == key)
      return a["value"];
  return nullptr;
}

std::string span_id_in(const std::string& traceparent) { return traceparent.substr(36, 16); }

double exposition_value(const std::string& exposition, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(exposition, m, std::regex{"\\n" + name + " (\\S+)"}))
    return -1;
  return std::stod(m[1]);
}

json tracing_keys(const std::string& endpoint, json extra = json::object()) {
  json t = {{"otlp_endpoint", endpoint}, {"service_name", "test-gateway"}, {"export_interval_ms", 50}};
  for (auto& [k, v] : extra.items())
    t[k] = v;
  return t;
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

TEST_CASE("tracing: without a tracing key calls still carry the trace, and log lines carry trace_id", "[tracing]") {
  seen_headers seen;
  test_server down;
  down.get("/a", [&](const httplib::Request& req, httplib::Response& res) {
    seen.add(req);
    answer_json(res, {{"a", 1}});
  });
  down.start();
  auto cfg = route_config_json("/p", {section("a", down.base_url() + "/a", 1000, {{"required", true}})}, 2000);
  child_process gw{GATHER_BINARY, {"serve", "--config", temp_file(cfg.dump())}};
  auto line = gw.wait_for_line("listening on");
  INFO("the gateway's stderr: " << gw.err_so_far());
  REQUIRE(line);
  std::smatch m;
  REQUIRE(std::regex_search(*line, m, std::regex{R"(127\.0\.0\.1:(\d+))"}));
  httplib::Client client{"127.0.0.1", std::stoi(m[1])};
  auto r = client.Get("/p", {{"traceparent", inbound_traceparent()}});
  REQUIRE(r);
  CHECK(r->status == 200);
  auto refused = client.Get("/nowhere", {{"traceparent", inbound_traceparent()}});
  REQUIRE(refused);
  CHECK(refused->status == 404);
  const auto headers = seen.all();
  REQUIRE(headers.size() == 1);
  CHECK(headers[0].substr(0, 36) == "00-" + inbound_trace + "-");
  CHECK(span_id_in(headers[0]) != inbound_parent); // a span id of its own
  CHECK(headers[0].substr(53) == "01");             // the caller's flag, passed on
  gw.signal(SIGTERM);
  REQUIRE(gw.wait_exit() == 0);
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = gw.err().find("\"trace_id\":\"" + inbound_trace + "\"", at)) != std::string::npos; ++at)
    ++lines;
  CHECK(lines == 2); // the answered request and the refused one
}

namespace {

/// `n` sequential requests: their bodies, and the slowest and total time.
struct run_figures {
  std::vector<std::string> bodies;
  long long slowest_ms = 0;
  long long total_ms = 0;
};

run_figures run_requests(running_gateway& gw, int n) {
  run_figures f;
  auto client = gw.client();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const auto t = std::chrono::steady_clock::now();
    auto r = client.Get("/p", {{"traceparent", inbound_traceparent()}});
    f.slowest_ms = std::max(f.slowest_ms, ms_since(t));
    if (!r) {
      f.bodies.push_back("no answer");
      continue;
    }
    auto body = json::parse(r->body, nullptr, false);
    if (body.is_object() && body.contains("sections"))
      for (auto& [name, part] : body["sections"].items())
        part.erase("ms"); // the one field that may differ between two equal answers
    f.bodies.push_back(std::to_string(r->status) + " " + body.dump());
  }
  f.total_ms = ms_since(start);
  return f;
}

} // namespace

TEST_CASE("tracing: a collector that is down or hangs changes no answer and no latency, and a full queue drops and counts",
          "[tracing]") {
  test_server down;
  down.get("/a", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"a", 1}}); });
  down.start();
  const auto cfg = [&](json tracing) {
    json top = json::object();
    if (!tracing.is_null())
      top["tracing"] = tracing;
    return route_config_json("/p", {section("a", down.base_url() + "/a", 1000, {{"required", true}})}, 2000, top);
  };
  constexpr int requests = 60;
  run_figures baseline;
  {
    running_gateway gw{cfg(nullptr)};
    baseline = run_requests(gw, requests);
  }
  REQUIRE(baseline.bodies.front().rfind("200 ", 0) == 0);

  SECTION("nothing listening on the collector's port") {
    int port = 0;
    ::close(listen_on_loopback(1, port));
    running_gateway gw{cfg(tracing_keys("http://127.0.0.1:" + std::to_string(port) + "/v1/traces",
                                        {{"max_queue_spans", 4}, {"export_interval_ms", 2000}}))};
    const auto traced = run_requests(gw, requests);
    CHECK(traced.bodies == baseline.bodies);
    CHECK(traced.slowest_ms < 1000);
    CHECK(traced.total_ms < baseline.total_ms * 3 + 500);
    auto failed = [&] {
      auto m = gw.get("/metrics");
      return m && exposition_value(m->body, "gather_span_exports_failed_total") >= 1;
    };
    CHECK(eventually(failed, milliseconds{10000}));
    auto m = gw.get("/metrics");
    REQUIRE(m);
    // 60 requests, two spans each, into a queue of 4 emptied (into a failing POST) every 2 s.
    CHECK(exposition_value(m->body, "gather_spans_dropped_total") >= requests);
    CHECK(exposition_value(m->body, "gather_spans_exported_total") == 0);
  }

  SECTION("a collector that accepts and never answers") {
    silent_server hanging;
    running_gateway gw{cfg(tracing_keys(hanging.base_url() + "/v1/traces",
                                        {{"max_queue_spans", 4}, {"max_batch_spans", 2},
                                         {"export_timeout_ms", 30000}}))};
    const auto traced = run_requests(gw, requests);
    CHECK(traced.bodies == baseline.bodies);
    CHECK(traced.slowest_ms < 1000);
    CHECK(traced.total_ms < baseline.total_ms * 3 + 500);
    REQUIRE(eventually([&] { return hanging.accepted() >= 1; }, milliseconds{10000}));
    CHECK(hanging.accepted() == 1); // one export in flight, hanging; nothing else sent
    auto m = gw.get("/metrics");
    REQUIRE(m);
    CHECK(exposition_value(m->body, "gather_spans_dropped_total") >= requests);
    CHECK(exposition_value(m->body, "gather_spans_exported_total") == 0);
    CHECK(exposition_value(m->body, "gather_span_exports_failed_total") == 0);
  }
}
