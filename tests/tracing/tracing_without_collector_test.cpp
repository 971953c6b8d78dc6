// Tracing without a working collector: none configured, one that is down, one that hangs.
//
// Tracing end to end: a real gateway and real downstreams. Without a tracing key each call still
// carries the traceparent and the request log its trace_id; a collector that is down or hangs
// changes nothing but counters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"
#include "tracing/tracing_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using namespace gather::test::tracing_support;

namespace {

double exposition_value(const std::string& exposition, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(exposition, m, std::regex{"\\n" + name + " (\\S+)"}))
    return -1;
  return std::stod(m[1]);
}

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
