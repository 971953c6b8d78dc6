// Section rows: a route of 20 sections drawn whole, and a 120 ms section's quantiles within 10%.
//
// GET /dashboard in a real browser: Debian's headless Chromium loads the page, lets it poll
// /metrics and /debug/actors several times (virtual time), dumps the DOM, and the test reads the
// figures the page drew (data-metric / data-value hooks) and compares them with what it scrapes
// itself. A machine without /usr/bin/chromium fails these tests: they never pass silently.
//
// GATHER_UPDATE_SCREENSHOT=1 also writes docs/dashboard.png and docs/dashboard-20-sections.png.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gather/ops/dashboard.hpp"
#include "support/chromium.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"
#include "ops/dashboard_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using namespace gather::test::dashboard_support;

TEST_CASE("a route of 20 sections: every row is drawn", "[system][dashboard]") {
  require_chromium();
  test_server down;
  down.get(R"(/s/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    const int n = std::stoi(req.matches[1].str());
    if (n % 7 == 3) {
      answer_json(res, {{"e", 1}}, 500);
      return;
    }
    if (n % 5 == 4)
      down.delay(milliseconds{300});
    answer_json(res, {{"n", n}});
  });
  down.start();
  json sections = json::array();
  for (int i = 0; i < 20; ++i) {
    json s = fallback_section("section_" + std::string(i < 10 ? "0" : "") + std::to_string(i) +
                                (i % 4 == 1 ? "_with_a_rather_long_name" : ""),
                              down.base_url() + "/s/" + std::to_string(i), 150);
    if (i % 6 == 2)
      s["cache_ttl_ms"] = 60000;
    if (i % 7 == 3)
      s["retry"] = {{"attempts", 2}};
    sections.push_back(s);
  }
  json cfg = route_config_json("/products/{id}", sections, 800);
  cfg["routes"].push_back({{"path", "/orders/{id}"}, {"deadline_ms", 500},
                           {"sections", {fallback_section("order", down.base_url() + "/s/1", 200),
                                         fallback_section("items", down.base_url() + "/s/3", 200)}}});
  running_gateway gw{cfg};
  std::atomic<bool> stop{false};
  std::thread load{[&] {
    auto client = gw.client();
    for (int i = 0; !stop; ++i) {
      client.Get(i % 3 == 2 ? ("/orders/" + std::to_string(i)).c_str() : ("/products/" + std::to_string(i % 4)).c_str());
      std::this_thread::sleep_for(milliseconds{30});
    }
  }};
  std::this_thread::sleep_for(milliseconds{1500});
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/dashboard";
  const auto dom = drawn_figures(dump_dom(url));
  // In a 1280 px window every section name is shown whole: the page marks a name cell it had to
  // cut with the class `clipped` (the names used to shrink to "s..").
  const auto narrow = dump_dom(url, 4500, "1280,900");
  if (update_screenshots())
    screenshot(gw.port(), docs_dir() / "dashboard-20-sections.png", "1400,1000");
  stop = true;
  load.join();
  CHECK(find_all(dom, "problems").empty());
  CHECK(find_all(dom, "section_total", {{"data-route", "/products/{id}"}, {"data-status", "ok"}}).size() == 20);
  CHECK(find_all(dom, "section_total", {{"data-route", "/orders/{id}"}, {"data-status", "ok"}}).size() == 2);
  CHECK(narrow.find(">section_09_with_a_rather_long_name<") != std::string::npos);
  CHECK(narrow.find("class=\"l name\"") != std::string::npos);
  CHECK(narrow.find("\"l name clipped\"") == std::string::npos);
}

TEST_CASE("a section that always takes about 120 ms reads within 10% of that on the dashboard",
          "[system][dashboard][serial]") {
  // Quantiles are interpolated inside one histogram bucket. With buckets 100 and 250 ms a section
  // that always took 121 ms read p50 175 ms; in the 100..125 ms bucket it reads p50 112.5 and p99
  // 124.75 ms. Two sections: one whose downstream answers after 116 ms, one cut by its 116 ms
  // timeout (like the demo's reviews section). 116, not 120: a loaded machine adds up to ~7 ms
  // (measured: 120 ms calls took 120..127 ms, one in ten past 125), and a p99 rank that falls
  // past 125 ms reads 142.5 ms from the 125..150 bucket however close to 125 the calls were, so
  // with 120 ms one run in three failed. From 116 ms the calls keep 9 ms of room in their bucket,
  // and the figures drawn stay within 10% of any latency from 114 to 125 ms.
  require_chromium();
  test_server down;
  down.get("/after-116ms", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{116});
    answer_json(res, {{"ok", true}});
  });
  down.start();
  silent_server hung;
  const json cfg = route_config_json(
    "/p", {fallback_section("answers", down.base_url() + "/after-116ms", 1000),
           fallback_section("times_out", hung.base_url() + "/x", 116)},
    2000);

  // The real latencies: each section's `ms` in the answers, 30 requests one after the other on a
  // fresh gateway. The test is about sections that always take 116..125 ms; a run in which the
  // machine stalled a call past that (seen under a load average of 8: one call of 334 ms) measured
  // something else, and is made again on a new gateway, three runs at most.
  std::unique_ptr<running_gateway> gw;
  std::map<std::string, std::vector<long long>> took;
  for (int run = 1;; ++run) {
    gw = std::make_unique<running_gateway>(cfg);
    took.clear();
    auto client = gw->client();
    bool stalled = false;
    std::string seen;
    for (int i = 0; i < 30; ++i) {
      auto r = client.Get("/p");
      REQUIRE(r);
      REQUIRE(r->status == 200);
      const auto body = json::parse(r->body);
      REQUIRE(body["sections"]["answers"]["status"] == "ok");
      REQUIRE(body["sections"]["times_out"]["status"] == "timeout");
      for (const char* name : {"answers", "times_out"}) {
        const auto ms = body["sections"][name]["ms"].get<long long>();
        took[name].push_back(ms);
        REQUIRE(ms >= 116); // never early
        if (ms > 125) {
          stalled = true;
          seen += " " + std::string{name} + " " + std::to_string(ms) + " ms";
        }
      }
    }
    if (!stalled)
      break;
    if (run == 3)
      FAIL("three runs in a row had calls stalled past 125 ms by the machine:" << seen);
    WARN("run " << run << " had calls stalled past 125 ms by the machine (" << seen << "); measuring again");
  }
  // Nearest-rank quantiles of what was measured.
  auto nearest_rank = [](std::vector<long long> v, double q) {
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return static_cast<double>(v[std::max<std::size_t>(rank, 1) - 1]);
  };

  const auto dom = drawn_figures(dump_dom("http://127.0.0.1:" + std::to_string(gw->port()) + "/dashboard"));
  CHECK(find_all(dom, "problems").empty());
  for (const char* name : {"answers", "times_out"}) {
    const label_set RS{{"data-route", "/p"}, {"data-section", name}};
    for (auto [metric, q] : {std::pair{"section_p50_ms", 0.5}, std::pair{"section_p99_ms", 0.99}}) {
      const double real = nearest_rank(took[name], q);
      const double shown = find_one(dom, metric, RS).value();
      INFO("section " << name << ": " << metric << " drawn " << shown << " ms, measured " << real << " ms");
      CHECK(std::abs(shown - real) <= 0.1 * real);
    }
  }
}
