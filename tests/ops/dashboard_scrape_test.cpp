// A known scrape from a fake gateway: parsing, escapes, rates, quantiles and windows as drawn.
//
// GET /dashboard in a real browser: Debian's headless Chromium loads the page, lets it poll
// /metrics and /debug/actors several times (virtual time), dumps the DOM, and the test reads the
// figures the page drew (data-metric / data-value hooks) and compares them with what it scrapes
// itself. A machine without /usr/bin/chromium fails these tests: they never pass silently.
//
// GATHER_UPDATE_SCREENSHOT=1 also writes docs/dashboard.png and docs/dashboard-20-sections.png.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "gather/ops/dashboard.hpp"
#include "support/chromium.hpp"
#include "support/test_server.hpp"
#include "ops/dashboard_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using namespace gather::test::dashboard_support;

TEST_CASE("the dashboard draws a known scrape: parsing, escapes, rates, interval quantiles, 60 s windows",
          "[system][dashboard]") {
  require_chromium();
  // A fake gateway: the page, a /metrics whose counters grow by a fixed step on every scrape, and
  // a fixed /debug/actors. gather_late_replies_total is the scrape's number, so the test knows
  // which scrape the page drew last.
  const std::string route_a = "/p/{id}";
  const std::string route_b = "/x/\"q\"\\b<img src=x onerror=\"document.title='pwned'\">\nend";
  const std::string node_b = "b\"2\n<i>";
  std::atomic<int> scrapes{0};
  auto metrics_text = [&](int n) {
    auto hist = [](std::string& out, const std::string& name, const std::string& lbl, std::array<double, 14> counts) {
      static const char* les[] = {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
                                  "0.25",  "0.5",    "1",     "2.5",  "5",     "10",   "+Inf"};
      double cum = 0;
      for (std::size_t i = 0; i < 14; ++i) {
        cum += counts[i];
        out += name + "_bucket{" + lbl + ",le=\"" + les[i] + "\"} " + std::to_string(static_cast<long long>(cum)) + "\n";
      }
      out += name + "_sum{" + lbl + "} 1.5\n" + name + "_count{" + lbl + "} " +
             std::to_string(static_cast<long long>(cum)) + "\n";
    };
    const std::string a = "route=\"" + escape_label_value(route_a) + "\"";
    const std::string b = "route=\"" + escape_label_value(route_b) + "\"";
    auto N = [](double v) { return std::to_string(static_cast<long long>(v)); };
    std::string out = "# HELP gather_requests_total Requests \\ answered \"by\" route.\n"
                      "# TYPE gather_requests_total counter\n";
    out += "gather_requests_total{" + a + ",code=\"200\"} " + N(100 + 10 * n) + "\n";
    out += "gather_requests_total{" + a + ",code=\"504\"} " + N(n) + " 1700000000000\n";
    out += "gather_requests_total{" + b + ",code=\"200\"} 7\n";
    out += "gather_request_errors_total{" + a + "} " + N(n) + "\n";
    out += "gather_request_errors_total{" + b + "} 0\n";
    hist(out, "gather_request_duration_seconds", a, {100, 0, 5.0 * n, 0, 0, 0, 5.0 * n, 0, 0, 0, 0, 1.0 * n, 0, 0});
    const std::string base = a + ",section=\"base\"", other = a + ",section=\"other\"", bs = b + ",section=\"s\"";
    out += "gather_section_total{" + base + ",status=\"ok\",source=\"live\"} " + N(1000 + 10 * n) + "\n";
    out += "gather_section_total{" + base + ",status=\"ok\",source=\"cache\"} " + N(3 * n) + "\n";
    out += "gather_section_total{" + base + ",status=\"timeout\",source=\"fallback\"} " + N(2 * n) + "\n";
    out += "gather_section_total{" + base + ",status=\"error\",source=\"fallback\"} " + N(n) + "\n";
    out += "gather_section_total{" + base + ",status=\"skipped\",source=\"fallback\"} " + N(n) + "\n";
    out += "gather_section_total{" + bs + ",status=\"ok\",source=\"live\"} 5\n";
    hist(out, "gather_section_duration_seconds", base, {0, 0, 0, 0, 17.0 * n, 0, 0, 0, 0, 1000, 0, 0, 0, 0});
    hist(out, "gather_section_duration_seconds", other, {});
    out += "gather_degraded_total{" + base + "} " + N(4 * n) + "\ngather_degraded_total{" + other + "} 0\n";
    out += "gather_retries_total{" + base + "} " + N(2 * n) + "\ngather_retries_total{" + other + "} 0\n";
    for (auto [event, v] : std::vector<std::pair<std::string, double>>{
           {"hit", 3.0 * n}, {"miss", 500.0 + n}, {"coalesced", 1.0 * n}, {"stale", 2}}) {
      out += "gather_cache_events_total{" + base + ",event=\"" + event + "\"} " + N(v) + "\n";
      out += "gather_cache_events_total{" + other + ",event=\"" + event + "\"} 0\n";
    }
    out += "gather_inflight_requests 3\ngather_overloaded_total 4 1700000000000\ngather_late_replies_total " + N(n) +
           "\ngather_actors_running 42\ngather_downstream_inflight 5\n";
    out += "gather_node_up{node=\"a:1\"} 1\ngather_node_up{node=\"" + escape_label_value(node_b) + "\"} 0\n";
    return out;
  };
  const json debug = {{"actors_running", 42}, {"scheduler_threads", 2}, {"coordinators", 3}, {"workers", 9},
                      {"inflight_requests", 3}, {"late_replies", 0}, {"client_gone", 1}, {"overloaded", 4},
                      {"downstream_inflight", 5},
                      {"slowest", {{{"request_id", "<script>x</script>"}, {"route", route_a}, {"age_ms", 120},
                                    {"pending", {"base", "<b>"}}}}},
                      {"nodes", {{{"node", "a:1"}, {"up", true}, {"inflight", 2}},
                                 {{"node", node_b}, {"up", false}, {"inflight", 0}}}}};
  test_server fake;
  fake.get("/dashboard", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", gather::dashboard_csp());
    res.set_content(gather::dashboard_html(), "text/html; charset=utf-8");
  });
  fake.get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(++scrapes), "text/plain; version=0.0.4");
  });
  fake.get("/debug/actors", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(debug.dump(), "application/json");
  });
  fake.start();

  const auto raw_dom = dump_dom(fake.base_url() + "/dashboard");
  const auto dom = drawn_figures(raw_dom);
  REQUIRE(!dom.empty());
  CHECK(find_all(dom, "problems").empty());
  const int k = static_cast<int>(find_one(dom, "late_replies_total").value());
  INFO("the page drew scrape " << k);
  REQUIRE(k >= 3);
  CHECK(find_one(dom, "scrapes").value() == k); // every scrape succeeded and was drawn
  CHECK(find_one(dom, "polls").value() == k);

  const label_set A{{"data-route", route_a}};
  const label_set B{{"data-route", route_b}};
  // Totals: straight from the last scrape, text and value.
  CHECK(find_one(dom, "requests_total", A).value() == 100 + 11 * k);
  CHECK(find_one(dom, "requests_total", A).text == std::to_string(100 + 11 * k));
  CHECK(find_one(dom, "requests_code_total", labels_with(A, {{"data-code", "200"}})).value() == 100 + 10 * k);
  CHECK(find_one(dom, "requests_code_total", labels_with(A, {{"data-code", "504"}})).value() == k);
  CHECK(find_one(dom, "request_errors_total", A).value() == k);
  // Rates over the last interval: 11 requests per scrape, one scrape per (virtual) second.
  const double rps = find_one(dom, "requests_per_s", A).value();
  CHECK(rps > 11 / 2.0);
  CHECK(rps < 11 / 0.5);
  // Quantiles from the last interval's bucket deltas (the cumulative buckets give ~1 ms).
  CHECK(find_one(dom, "p50_ms", A)["data-window"] == "interval");
  CHECK(find_one(dom, "p50_ms", A).value() == Approx(55.0));
  CHECK(find_one(dom, "p99_ms", A).value() == Approx(4725.0));
  // Error ratio over the 60 s window: (k-1) errors of 11 (k-1) requests.
  CHECK(find_one(dom, "error_ratio", A)["data-window"] == "60s");
  CHECK(find_one(dom, "error_ratio", A).value() == Approx(1.0 / 11));

  const label_set base = labels_with(A, {{"data-section", "base"}});
  CHECK(find_one(dom, "section_total", labels_with(base, {{"data-status", "ok"}})).value() == 1000 + 13 * k);
  CHECK(find_one(dom, "section_total", labels_with(base, {{"data-status", "timeout"}})).value() == 2 * k);
  CHECK(find_one(dom, "section_total", labels_with(base, {{"data-status", "error"}})).value() == k);
  CHECK(find_one(dom, "section_total", labels_with(base, {{"data-status", "rejected"}})).value() == 0);
  CHECK(find_one(dom, "section_total", labels_with(base, {{"data-status", "skipped"}})).value() == k);
  CHECK(find_one(dom, "section_ok_share", base)["data-window"] == "60s");
  CHECK(find_one(dom, "section_ok_share", base).value() == Approx(13.0 / 17));
  CHECK(find_one(dom, "section_p50_ms", base).value() == Approx(17.5));
  CHECK(find_one(dom, "section_p99_ms", base).value() == Approx(24.85));
  CHECK(find_one(dom, "section_calls_per_s", base).value() > 17 / 2.0);
  CHECK(find_one(dom, "cache_hit_ratio", base)["data-window"] == "60s");
  CHECK(find_one(dom, "cache_hit_ratio", base).value() == Approx(0.6));
  CHECK(find_one(dom, "cache_hits", base).value() == 3 * (k - 1));
  CHECK(find_one(dom, "cache_lookups", base).value() == 5 * (k - 1));
  CHECK(find_one(dom, "retries_total", base).value() == 2 * k);
  CHECK(find_one(dom, "degraded_total", base).value() == 4 * k);

  // A section with no outcomes yet: zeros, no latency, no cache column.
  const label_set other = labels_with(A, {{"data-section", "other"}});
  CHECK(find_one(dom, "section_total", labels_with(other, {{"data-status", "ok"}})).value() == 0);
  CHECK(find_one(dom, "section_p50_ms", other)["data-value"].empty());
  CHECK(find_all(dom, "cache_hit_ratio", other).empty());

  // The route whose label needs every escape comes back intact, and nothing in it became markup.
  CHECK(find_one(dom, "requests_total", B).value() == 7);
  CHECK(find_one(dom, "requests_per_s", B).value() == 0);
  CHECK(find_one(dom, "p50_ms", B)["data-value"].empty());
  CHECK(find_one(dom, "error_ratio", B)["data-window"] == "all");
  CHECK(find_one(dom, "error_ratio", B).value() == 0);
  CHECK(find_one(dom, "section_total", labels_with(B, {{"data-section", "s"}, {"data-status", "ok"}})).value() == 5);
  CHECK(raw_dom.find("<img") == std::string::npos);
  CHECK(raw_dom.find("<i>") == std::string::npos);
  CHECK(raw_dom.find("<b>") == std::string::npos);
  CHECK(raw_dom.find("<script>x") == std::string::npos);
  CHECK(raw_dom.find("<title>Gather dashboard</title>") != std::string::npos); // no handler ran

  // Globals and /debug/actors.
  CHECK(find_one(dom, "inflight_requests").value() == 3);
  CHECK(find_one(dom, "overloaded_total").value() == 4);
  CHECK(find_one(dom, "actors_running").value() == 42);
  CHECK(find_one(dom, "downstream_inflight").value() == 5);
  CHECK(find_one(dom, "coordinators").value() == 3);
  CHECK(find_one(dom, "workers").value() == 9);
  CHECK(find_one(dom, "scheduler_threads").value() == 2);
  CHECK(find_one(dom, "client_gone").value() == 1);
  CHECK(find_one(dom, "nodes_up").value() == 1);
  CHECK(find_one(dom, "nodes_down").value() == 1);
  CHECK(find_one(dom, "node_up", {{"data-node", "a:1"}}).value() == 1);
  CHECK(find_one(dom, "node_up", {{"data-node", node_b}}).value() == 0);
  CHECK(find_one(dom, "node_inflight", {{"data-node", "a:1"}}).value() == 2);
  CHECK(find_one(dom, "slowest_age_ms", {{"data-request-id", "<script>x</script>"}}).value() == 120);
  CHECK(find_one(dom, "slowest_pending", {{"data-request-id", "<script>x</script>"}}).value() == 2);
}
