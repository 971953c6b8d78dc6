// /metrics: the exposition parsed back line by line, and every series moving as it should.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "gather/ops/metrics.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

/// A scrape: `name{labels}` exactly as exposed -> value; TYPE lines by metric name.
struct parsed_scrape {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  double operator[](const std::string& key) const {
    auto it = samples.find(key);
    return it == samples.end() ? 0 : it->second;
  }
};

parsed_scrape parse(const std::string& text) {
  parsed_scrape s;
  std::istringstream in{text};
  std::string line;
  // Label values may contain escaped quotes; the value follows the last space.
  const std::regex sample_line{R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$)"};
  while (std::getline(in, line)) {
    REQUIRE(!line.empty());
    if (line.rfind("# HELP ", 0) == 0)
      continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words{line.substr(7)};
      std::string name, type;
      words >> name >> type;
      s.types[name] = type;
      continue;
    }
    std::smatch m;
    INFO(line);
    REQUIRE(std::regex_match(line, m, sample_line));
    s.samples[m[1].str() + m[2].str()] = std::stod(m[3].str());
  }
  return s;
}

parsed_scrape scrape_of(running_gateway& gw) {
  auto r = gw.get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return parse(r->body);
}


} // namespace

TEST_CASE("label values are escaped as the text format requires", "[unit][metrics]") {
  CHECK(gather::escape_label(R"(a"b\c)") == R"(a\"b\\c)");
  CHECK(gather::escape_label("line\nbreak") == R"(line\nbreak)");
}

TEST_CASE("every contract metric is exposed with its type", "[metrics]") {
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  running_gateway gw{route_config_json("/p", {{{"name", "s"}, {"url", down.base_url() + "/ok"}, {"timeout_ms", 500}, {"required", true}}}, 1000,
                                       {{"cluster", {{"nodes", {"127.0.0.1:4242"}}}}})};
  gw.get("/p");
  auto s = scrape_of(gw);
  const std::map<std::string, std::string> expected{
    {"gather_requests_total", "counter"},           {"gather_request_duration_seconds", "histogram"},
    {"gather_section_total", "counter"},            {"gather_section_duration_seconds", "histogram"},
    {"gather_degraded_total", "counter"},           {"gather_request_errors_total", "counter"},
    {"gather_inflight_requests", "gauge"},          {"gather_overloaded_total", "counter"},
    {"gather_retries_total", "counter"},            {"gather_cache_events_total", "counter"},
    {"gather_late_replies_total", "counter"},       {"gather_actors_running", "gauge"},
    {"gather_downstream_inflight", "gauge"},        {"gather_node_up", "gauge"}};
  for (const auto& [name, type] : expected) {
    INFO(name);
    CHECK(s.types[name] == type);
  }
  CHECK(s[R"(gather_requests_total{route="/p",code="200"})"] == 1);
  CHECK(s[R"(gather_node_up{node="127.0.0.1:4242"})"] == 0);
  CHECK(s.samples.count(R"(gather_node_up{node="127.0.0.1:4242"})") == 1);
  // Histogram buckets: exactly latency_histogram::bounds then +Inf (whatever that set is), their
  // counts cumulative, +Inf == _count.
  const std::string prefix = R"(gather_request_duration_seconds_bucket{route="/p",le=")";
  std::vector<std::pair<double, double>> buckets; // le, cumulative count
  for (const auto& [key, value] : s.samples)
    if (key.rfind(prefix, 0) == 0) {
      const auto le = key.substr(prefix.size(), key.size() - prefix.size() - 2); // without "}
      buckets.emplace_back(le == "+Inf" ? INFINITY : std::stod(le), value);
    }
  std::sort(buckets.begin(), buckets.end());
  const auto& bounds = gather::latency_histogram::bounds;
  REQUIRE(buckets.size() == bounds.size() + 1);
  double previous = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (i < bounds.size())
      CHECK(buckets[i].first == Approx(bounds[i]));
    CHECK(buckets[i].second >= previous);
    previous = buckets[i].second;
  }
  CHECK(std::isinf(buckets.back().first));
  CHECK(previous == s[R"(gather_request_duration_seconds_count{route="/p"})"]);
  CHECK(previous == 1);
}

TEST_CASE("a timeout, a retry, an error and a refusal each move their own series", "[metrics]") {
  silent_server hung;
  test_server down;
  std::atomic<int> flaky{0};
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.get("/flaky", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"ok", 1}}, flaky++ % 2 == 0 ? 503 : 200);
  });
  down.start();
  json sections = {
    {{"name", "base"}, {"url", down.base_url() + "/ok"}, {"timeout_ms", 500}, {"required", true}},
    {{"name", "slow"}, {"url", hung.base_url() + "/x"}, {"timeout_ms", 100}, {"fallback", 0}},
    {{"name", "flaky"}, {"url", down.base_url() + "/flaky"}, {"timeout_ms", 500}, {"fallback", 0},
     {"retry", {{"attempts", 2}, {"backoff_ms", 10}}}}};
  running_gateway gw{route_config_json("/p", sections, 2000)};
  for (int i = 0; i < 3; ++i)
    REQUIRE(gw.get("/p")->status == 200);
  gw.get("/nowhere");
  gw.client().Post("/p", "", "text/plain");
  auto s = scrape_of(gw);
  CHECK(s[R"(gather_requests_total{route="/p",code="200"})"] == 3);
  CHECK(s[R"(gather_requests_total{route="no_route",code="404"})"] == 1);
  CHECK(s[R"(gather_requests_total{route="/p",code="405"})"] == 1);
  CHECK(s[R"(gather_request_errors_total{route="/p"})"] == 1);
  CHECK(s[R"(gather_section_total{route="/p",section="base",status="ok",source="live"})"] == 3);
  CHECK(s[R"(gather_section_total{route="/p",section="slow",status="timeout",source="fallback"})"] == 3);
  CHECK(s[R"(gather_degraded_total{route="/p",section="slow"})"] == 3);
  CHECK(s[R"(gather_degraded_total{route="/p",section="base"})"] == 0);
  CHECK(s[R"(gather_section_total{route="/p",section="flaky",status="ok",source="live"})"] == 3);
  CHECK(s[R"(gather_retries_total{route="/p",section="flaky"})"] == 3);
  CHECK(s[R"(gather_section_duration_seconds_count{route="/p",section="slow"})"] == 3);
  // The slow section took at least its 100 ms timeout each time: nothing under 0.05 s.
  CHECK(s[R"(gather_section_duration_seconds_bucket{route="/p",section="slow",le="0.05"})"] == 0);
}

TEST_CASE("overload and in-flight gauges move", "[metrics]") {
  silent_server hung;
  running_gateway gw{route_config_json("/p", {{{"name", "s"}, {"url", hung.base_url() + "/x"}, {"timeout_ms", 2000}, {"fallback", 0}}}, 2000,
                                       {{"max_inflight", 1}})};
  std::thread holder([&] { gw.get("/p"); });
  REQUIRE(eventually([&] { return hung.accepted() == 1; }));
  CHECK(gw.get("/p")->status == 503);
  auto s = scrape_of(gw);
  CHECK(s["gather_overloaded_total"] == 1);
  CHECK(s["gather_inflight_requests"] == 1);
  CHECK(s["gather_downstream_inflight"] == 1);
  CHECK(s["gather_actors_running"] >= 2); // the coordinator and its worker
  CHECK(s[R"(gather_requests_total{route="/p",code="503"})"] == 1);
  auto actors = json::parse(gw.get("/debug/actors")->body);
  CHECK(actors["coordinators"] == 1);
  CHECK(actors["workers"] == 1);
  REQUIRE(actors["slowest"].size() == 1);
  CHECK(actors["slowest"][0]["route"] == "/p");
  CHECK(actors["slowest"][0]["pending"] == json::array({"s"}));
  CHECK(actors["downstream_queue"] == 0); // the curl thread took the call long ago
  REQUIRE(actors["mailboxes"].size() == 4);
  CHECK(actors["mailboxes"][0] == json{{"actor", "section_cache/0"}, {"depth", 0}, {"peak", 0}});
  holder.join();
  auto after = scrape_of(gw);
  CHECK(after["gather_inflight_requests"] == 0);
}
