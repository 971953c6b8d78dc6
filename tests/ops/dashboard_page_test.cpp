// The page itself: one self-contained document, and the same bytes as its sources inlined.
//
// GET /dashboard in a real browser: Debian's headless Chromium loads the page, lets it poll
// /metrics and /debug/actors several times (virtual time), dumps the DOM, and the test reads the
// figures the page drew (data-metric / data-value hooks) and compares them with what it scrapes
// itself. A machine without /usr/bin/chromium fails these tests: they never pass silently.
//
// GATHER_UPDATE_SCREENSHOT=1 also writes docs/dashboard.png and docs/dashboard-20-sections.png.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "gather/ops/dashboard.hpp"
#include "support/child_process.hpp"
#include "support/chromium.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Where the first difference between `want` and `got` is, with some context; empty when equal.
/// (Catch would print both pages whole.)
std::string difference(const std::string& want, const std::string& got) {
  if (want == got)
    return {};
  std::size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at])
    ++at;
  const auto from = at < 80 ? 0 : at - 80;
  return "sizes " + std::to_string(want.size()) + " and " + std::to_string(got.size()) +
         ", first difference at byte " + std::to_string(at) + "\nwanted: ..." + want.substr(from, 160) +
         "\ngot:    ..." + got.substr(from, 160);
}

/// The page as built from app/ops/dashboard/ now: index.html with its line
/// `<link rel="stylesheet" href="dashboard.css">` replaced by <style>, dashboard.css, </style>, and
/// its line `<script src="dashboard.js"></script>` by <script>, dashboard.js, </script>. The same
/// inlining as cmake/embed_dashboard.cmake, written a second time so that this checks the build step.
std::string page_from_sources() {
  const fs::path dir = fs::path{GATHER_SOURCE_DIR} / "app" / "ops" / "dashboard";
  std::string page = read_file(dir / "index.html");
  REQUIRE(!page.empty());
  auto inline_file = [&page](const std::string& marker, const std::string& tag, std::string content) {
    INFO("index.html's line " << marker);
    const std::string line = marker + "\n";
    const auto at = page.find(line);
    REQUIRE(at != std::string::npos);
    REQUIRE((at == 0 || page[at - 1] == '\n'));
    REQUIRE(page.find(line, at + 1) == std::string::npos);
    REQUIRE(!content.empty());
    if (content.back() != '\n')
      content += '\n';
    page.replace(at, line.size(), "<" + tag + ">\n" + content + "</" + tag + ">\n");
  };
  inline_file(R"(<link rel="stylesheet" href="dashboard.css">)", "style", read_file(dir / "dashboard.css"));
  inline_file(R"(<script src="dashboard.js"></script>)", "script", read_file(dir / "dashboard.js"));
  return page;
}

} // namespace

TEST_CASE("GET /dashboard is one self-contained HTML page", "[dashboard]") {
  const auto& html = gather::dashboard_html();
  CHECK(html.rfind("<!doctype html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  // Nothing loaded from elsewhere: no script/style/image URLs. The only "http" is the SVG namespace.
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link rel=\"stylesheet\"") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  std::size_t http_count = 0;
  for (auto p = html.find("http://"); p != std::string::npos; p = html.find("http://", p + 1)) {
    CHECK(html.compare(p, 26, "http://www.w3.org/2000/svg") == 0);
    ++http_count;
  }
  CHECK(http_count == 1);
  // Gateway data is never parsed as HTML.
  CHECK(html.find("innerHTML") == std::string::npos);
  CHECK(html.find("outerHTML") == std::string::npos);
  CHECK(html.find("insertAdjacentHTML") == std::string::npos);
  CHECK(html.find("document.write") == std::string::npos);

  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {{{"name", "base"}, {"url", down.base_url() + "/ok"}, {"timeout_ms", 500}, {"required", true}}}, 1000)};
  auto r = gw.get("/dashboard");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(r->get_header_value("Content-Security-Policy") == gather::dashboard_csp());
  CHECK(r->get_header_value("Cache-Control") == "no-store");
  CHECK(r->has_header("X-Request-Id"));
  CHECK(r->body == html);
  auto head = gw.client().Head("/dashboard");
  REQUIRE(head);
  CHECK(head->status == 405);
}

TEST_CASE("the page the binary serves is index.html with dashboard.css and dashboard.js inlined",
          "[dashboard]") {
  // Built from the files now, so the embedded page and its sources cannot drift apart.
  const std::string want = page_from_sources();
  {
    const auto embedded = difference(want, gather::dashboard_html());
    INFO("the embedded page (rebuild after editing app/ops/dashboard/): " << embedded);
    CHECK(embedded.empty());
  }

  const json cfg = route_config_json("/p", {section("a", "http://127.0.0.1:9/x", 100, {{"fallback", 1}})}, 1000);
  child_process gw{GATHER_BINARY, {"serve", "--config", temp_file(cfg.dump()), "--listen", "127.0.0.1:0"}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const auto port = std::stoi(line->substr(line->rfind(':') + 1));
  httplib::Client client{"127.0.0.1", port};
  auto r = client.Get("/dashboard");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Security-Policy") == gather::dashboard_csp());
  const auto served = difference(want, r->body);
  INFO("the page served: " << served);
  CHECK(served.empty());
}
