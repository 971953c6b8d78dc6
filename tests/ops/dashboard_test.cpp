// GET /dashboard in a real browser: Debian's headless Chromium loads the page, lets it poll
// /metrics and /debug/actors several times (virtual time), dumps the DOM, and the test reads the
// figures the page drew (data-metric / data-value hooks) and compares them with what it scrapes
// itself. A machine without /usr/bin/chromium fails these tests: they never pass silently.
//
// GATHER_UPDATE_SCREENSHOT=1 also writes docs/dashboard.png and docs/dashboard-20-sections.png.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gather/ops/dashboard.hpp"
#include "support/child_process.hpp"
#include "support/chromium.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

namespace {

bool update_screenshots() {
  const char* v = std::getenv("GATHER_UPDATE_SCREENSHOT");
  return v && std::string{v} == "1";
}

fs::path docs_dir() {
  return fs::path{GATHER_SOURCE_DIR} / "docs";
}


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

/// Serves the gateway's /dashboard, and its /metrics and /debug/actors each after `pace` of real
/// time. Under --virtual-time-budget the page's clock stands still while a fetch is pending and
/// races ahead otherwise, so against the gateway itself its "per second" rates are per virtual
/// second. Through this proxy a virtual second between polls costs about one real second, and
/// the screenshots show real rates. (It also shows that the page's relative URLs follow a proxy.)
class paced_proxy {
public:
  paced_proxy(int gateway_port, milliseconds pace) {
    server_.get("/dashboard", [gateway_port](const httplib::Request&, httplib::Response& res) {
      forward(gateway_port, "/dashboard", res);
    });
    for (const char* path : {"/metrics", "/debug/actors"})
      server_.get(path, [this, gateway_port, pace, path](const httplib::Request&, httplib::Response& res) {
        server_.delay(pace);
        forward(gateway_port, path, res);
      });
    server_.start();
  }
  std::string url() const { return server_.base_url() + "/dashboard"; }

private:
  static void forward(int port, const std::string& path, httplib::Response& res) {
    httplib::Client c{"127.0.0.1", port};
    auto r = c.Get(path.c_str());
    if (!r) {
      res.status = 502;
      return;
    }
    res.status = r->status;
    res.set_content(r->body, r->get_header_value("Content-Type").c_str());
  }
  test_server server_;
};

void screenshot(int gateway_port, const fs::path& file, const std::string& size = "1400,1000") {
  paced_proxy proxy{gateway_port, milliseconds{900}};
  const fs::path shot = temp_file("", ".png"); // replaces `file` only once it is complete
  fs::remove(shot);
  run_chromium({"--virtual-time-budget=6000", "--window-size=" + size, "--screenshot=" + shot.string(),
                proxy.url()},
               [&](const browser_result&) { return fs::exists(shot) && fs::file_size(shot) > 10000; });
  fs::copy_file(shot, file, fs::copy_options::overwrite_existing);
  fs::remove(shot);
}

// ------------------------------------------------------------------ reading the dumped DOM

std::string decode_entities(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '&') {
      static const std::pair<const char*, const char*> names[] = {
        {"&amp;", "&"}, {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&nbsp;", "\xC2\xA0"}, {"&#39;", "'"}};
      bool done = false;
      for (auto [name, value] : names)
        if (s.compare(i, std::strlen(name), name) == 0) {
          out += value;
          i += std::strlen(name);
          done = true;
          break;
        }
      if (done)
        continue;
    }
    out += s[i++];
  }
  return out;
}

struct drawn {
  std::map<std::string, std::string> attrs;
  std::string text;
  std::string operator[](const std::string& name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? std::string{} : it->second;
  }
  double value() const {
    auto v = (*this)["data-value"];
    REQUIRE(!v.empty());
    return std::stod(v);
  }
};

/// Every element with a data-metric attribute, its attributes decoded and its leading text.
std::vector<drawn> drawn_figures(const std::string& dom) {
  std::vector<drawn> all;
  std::size_t i = 0;
  while ((i = dom.find('<', i)) != std::string::npos) {
    ++i;
    if (i >= dom.size() || !std::isalpha(static_cast<unsigned char>(dom[i])))
      continue;
    while (i < dom.size() && std::isalnum(static_cast<unsigned char>(dom[i])))
      ++i;
    drawn d;
    for (;;) {
      while (i < dom.size() && std::isspace(static_cast<unsigned char>(dom[i])))
        ++i;
      if (i >= dom.size() || dom[i] == '>' || dom[i] == '/')
        break;
      auto name_start = i;
      while (i < dom.size() && dom[i] != '=' && dom[i] != '>' && !std::isspace(static_cast<unsigned char>(dom[i])))
        ++i;
      auto name = dom.substr(name_start, i - name_start);
      std::string value;
      if (i < dom.size() && dom[i] == '=' && i + 1 < dom.size() && dom[i + 1] == '"') {
        auto close = dom.find('"', i + 2);
        value = decode_entities(dom.substr(i + 2, close - (i + 2)));
        i = close + 1;
      }
      d.attrs[name] = value;
    }
    auto gt = dom.find('>', i);
    if (gt == std::string::npos)
      break;
    i = gt + 1;
    if (d.attrs.count("data-metric")) {
      d.text = decode_entities(dom.substr(i, dom.find('<', i) - i));
      all.push_back(std::move(d));
    }
  }
  return all;
}

using label_set = std::map<std::string, std::string>;

label_set labels_with(label_set l, const label_set& more) {
  l.insert(more.begin(), more.end());
  return l;
}

std::vector<const drawn*> find_all(const std::vector<drawn>& figures, const std::string& metric,
                                   const label_set& want = {}) {
  std::vector<const drawn*> found;
  for (const auto& d : figures) {
    if (d["data-metric"] != metric)
      continue;
    bool match = true;
    for (const auto& [k, v] : want)
      if (!d.attrs.count(k) || d[k] != v)
        match = false;
    if (match)
      found.push_back(&d);
  }
  return found;
}

const drawn& find_one(const std::vector<drawn>& figures, const std::string& metric, const label_set& want = {}) {
  auto found = find_all(figures, metric, want);
  std::string described = metric;
  for (const auto& [k, v] : want)
    described += " " + k + "=" + v;
  INFO("drawn figure " << described);
  REQUIRE(found.size() == 1);
  return *found.front();
}

// ------------------------------------------------------------------ reading /metrics

struct metric_sample {
  std::string name;
  label_set lbl;
  double value = 0;
};

std::vector<metric_sample> parse_metrics(const std::string& text) {
  std::vector<metric_sample> out;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    metric_sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ')
      ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        auto eq = line.find('=', i);
        auto key = line.substr(i, eq - i);
        i = eq + 2; // past ="
        std::string v;
        while (line[i] != '"') {
          if (line[i] == '\\') {
            v += line[i + 1] == 'n' ? '\n' : line[i + 1];
            i += 2;
          } else {
            v += line[i++];
          }
        }
        ++i;
        if (line[i] == ',')
          ++i;
        s.lbl[key] = v;
      }
      ++i;
    }
    auto rest = line.substr(i);
    auto first = rest.find_first_not_of(' ');
    auto token = rest.substr(first, rest.find(' ', first) - first);
    s.value = token == "+Inf" ? INFINITY : std::stod(token);
    out.push_back(std::move(s));
  }
  return out;
}

double sum_of(const std::vector<metric_sample>& samples, const std::string& name, const label_set& want = {}) {
  double total = 0;
  for (const auto& s : samples) {
    if (s.name != name)
      continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.lbl.find(k);
      if (it == s.lbl.end() || it->second != v)
        match = false;
    }
    if (match)
      total += s.value;
  }
  return total;
}

std::vector<std::string> label_values(const std::vector<metric_sample>& samples, const std::string& name,
                                      const std::string& key, const label_set& want = {}) {
  std::vector<std::string> values;
  for (const auto& s : samples) {
    if (s.name != name || !s.lbl.count(key))
      continue;
    bool match = true;
    for (const auto& [k, v] : want)
      if (!s.lbl.count(k) || s.lbl.at(k) != v)
        match = false;
    if (match && std::find(values.begin(), values.end(), s.lbl.at(key)) == values.end())
      values.push_back(s.lbl.at(key));
  }
  return values;
}

/// PromQL's histogram_quantile over one series' cumulative buckets (what the page computes when
/// nothing was observed in the last interval). NaN when empty.
double quantile(const std::vector<metric_sample>& samples, const std::string& name, const label_set& want, double q) {
  std::vector<std::pair<double, double>> buckets; // le, cumulative count
  for (const auto& s : samples) {
    if (s.name != name + "_bucket")
      continue;
    bool match = true;
    for (const auto& [k, v] : want)
      if (!s.lbl.count(k) || s.lbl.at(k) != v)
        match = false;
    if (match)
      buckets.emplace_back(s.lbl.at("le") == "+Inf" ? INFINITY : std::stod(s.lbl.at("le")), s.value);
  }
  std::sort(buckets.begin(), buckets.end());
  if (buckets.size() < 2 || buckets.back().second <= 0)
    return NAN;
  const double rank = q * buckets.back().second;
  std::size_t b = 0;
  while (b < buckets.size() - 1 && buckets[b].second < rank)
    ++b;
  if (b == buckets.size() - 1)
    return buckets[b - 1].first;
  const double lower = b == 0 ? 0 : buckets[b - 1].first;
  const double below = b == 0 ? 0 : buckets[b - 1].second;
  return lower + (buckets[b].first - lower) * (rank - below) / (buckets[b].second - below);
}

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string scrape_text(const running_gateway& gw) {
  auto r = gw.get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

/// The counters only (gauges such as actors_running move on their own).
std::string counters_of(const std::string& text) {
  std::string out;
  for (const auto& s : parse_metrics(text)) {
    // Not the request's figures; and each scrape is a connection of its own, counted in
    // gather_connections_total.
    if (s.name == "gather_actors_running" || s.name == "gather_downstream_inflight" ||
        s.name == "gather_connections_total")
      continue;
    out += s.name;
    for (const auto& [k, v] : s.lbl)
      out += "," + k + "=" + v;
    out += " " + std::to_string(s.value) + "\n";
  }
  return out;
}

json fallback_section(const std::string& name, const std::string& url, int timeout_ms, json extra = json::object()) {
  json s = {{"name", name}, {"url", url}, {"timeout_ms", timeout_ms}, {"fallback", json::object()}};
  for (auto& [k, v] : extra.items())
    s[k] = v;
  return s;
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

TEST_CASE("under load the dashboard polls the gateway, and its totals equal /metrics", "[system][dashboard]") {
  require_chromium();
  test_server down;
  down.get(R"(/ok/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    answer_json(res, {{"id", req.matches[1].str()}});
  });
  down.get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{1500});
    answer_json(res, {{"late", true}});
  });
  // 503 is retryable (500 is not): the broken section makes retries.
  down.get("/broken", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"e", 1}}, 503); });
  down.start();
  const auto b = down.base_url();
  json cfg = route_config_json(
    "/p/{id}",
    {{{"name", "base"}, {"url", b + "/ok/{id}"}, {"timeout_ms", 500}, {"required", true}, {"cache_ttl_ms", 60000}},
     fallback_section("slow", b + "/slow", 80),
     fallback_section("broken", b + "/broken", 300,
                      {{"retry", {{"attempts", 2}, {"backoff_ms", 5}}},
                       // opens and probes again and again: the circuit columns move
                       {"circuit", {{"failure_ratio", 1}, {"min_calls", 4}, {"open_ms", 300}}}}),
     fallback_section("dep", b + "/ok/{broken.id}", 300)},
    1000);
  cfg["routes"].push_back({{"path", "/q"}, {"deadline_ms", 500},
                           {"sections", {{{"name", "must"}, {"url", b + "/broken"}, {"timeout_ms", 200},
                                          {"required", true}}}}});
  running_gateway gw{cfg};
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/dashboard";

  // A little load: one client in a loop, about 8 requests a second.
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::thread load{[&] {
    auto client = gw.client();
    for (int i = 0; !stop; ++i) {
      client.Get(i % 4 == 3 ? "/q" : ("/p/" + std::to_string(i % 3)).c_str());
      ++sent;
      std::this_thread::sleep_for(milliseconds{20});
    }
  }};
  struct joiner {
    std::atomic<bool>& stop;
    std::thread& t;
    ~joiner() {
      stop = true;
      if (t.joinable())
        t.join();
    }
  } join_load{stop, load};
  REQUIRE(eventually([&] { return sent >= 5; }));

  SECTION("while requests flow, the page follows them") {
    // Through the paced proxy each poll interval spans half a real second, in which the load
    // sends requests; straight against the gateway an interval of virtual time can be a few real
    // milliseconds with no request in it, and the rate of the last interval is then 0.
    paced_proxy proxy{gw.port(), milliseconds{500}};
    const auto before = parse_metrics(scrape_text(gw));
    const auto dom = drawn_figures(dump_dom(proxy.url()));
    const auto after = parse_metrics(scrape_text(gw));
    CHECK(find_all(dom, "problems").empty());
    CHECK(find_one(dom, "scrapes").value() >= 3);
    const double drawn_total = find_one(dom, "requests_total", {{"data-route", "/p/{id}"}}).value();
    CHECK(drawn_total >= sum_of(before, "gather_requests_total", {{"route", "/p/{id}"}}));
    CHECK(drawn_total <= sum_of(after, "gather_requests_total", {{"route", "/p/{id}"}}));
    CHECK(find_one(dom, "requests_per_s", {{"data-route", "/p/{id}"}}).value() > 0);
    CHECK(find_one(dom, "p99_ms", {{"data-route", "/p/{id}"}}).value() > 0);
    if (update_screenshots())
      screenshot(gw.port(), docs_dir() / "dashboard.png");
  }

  SECTION("once the load stops, every total the page drew equals the scrape") {
    std::this_thread::sleep_for(milliseconds{1500});
    stop = true;
    load.join();
    // Stable: nothing in flight and two scrapes 300 ms apart with equal counters.
    std::string last;
    REQUIRE(eventually(
      [&] {
        auto now = scrape_text(gw);
        bool stable = counters_of(now) == last &&
                      sum_of(parse_metrics(now), "gather_inflight_requests") == 0;
        last = counters_of(now);
        std::this_thread::sleep_for(milliseconds{300});
        return stable;
      },
      std::chrono::seconds(10)));
    const auto dom = drawn_figures(dump_dom(url));
    const auto text = scrape_text(gw);
    REQUIRE(counters_of(text) == last); // nothing moved while the browser ran
    const auto m = parse_metrics(text);
    CHECK(find_all(dom, "problems").empty());
    CHECK(find_one(dom, "scrapes").value() >= 3);

    // Globals.
    CHECK(find_one(dom, "late_replies_total").value() == sum_of(m, "gather_late_replies_total"));
    CHECK(find_one(dom, "overloaded_total").value() == sum_of(m, "gather_overloaded_total"));
    CHECK(find_one(dom, "inflight_requests").value() == 0);
    CHECK(find_one(dom, "late_replies_total").text == std::to_string(static_cast<long long>(sum_of(m, "gather_late_replies_total"))));

    // Every route: totals, codes, quantiles of the whole histogram (no delta in the last
    // interval), the error ratio over everything (nothing in the last 60 s... of virtual time).
    auto routes = label_values(m, "gather_requests_total", "route");
    REQUIRE(std::find(routes.begin(), routes.end(), "/p/{id}") != routes.end());
    REQUIRE(std::find(routes.begin(), routes.end(), "/q") != routes.end());
    for (const auto& route : routes) {
      INFO("route " << route);
      const label_set R{{"data-route", route}};
      const label_set r{{"route", route}};
      const double total = sum_of(m, "gather_requests_total", r);
      CHECK(find_one(dom, "requests_total", R).value() == total);
      CHECK(find_one(dom, "requests_total", R).text == std::to_string(static_cast<long long>(total)));
      for (const auto& code : label_values(m, "gather_requests_total", "code", r)) {
        label_set RC = R;
        RC["data-code"] = code;
        CHECK(find_one(dom, "requests_code_total", RC).value() ==
              sum_of(m, "gather_requests_total", {{"route", route}, {"code", code}}));
      }
      const double errors = sum_of(m, "gather_request_errors_total", r);
      CHECK(find_one(dom, "request_errors_total", R).value() == errors);
      CHECK(find_one(dom, "requests_per_s", R).value() == 0);
      CHECK(find_one(dom, "error_ratio", R).value() == Approx(errors / total));
      for (auto [metric, q] : {std::pair{"p50_ms", 0.5}, std::pair{"p99_ms", 0.99}}) {
        const auto& d = find_one(dom, metric, R);
        CHECK(d["data-window"] == "all");
        CHECK(d.value() == Approx(1000 * quantile(m, "gather_request_duration_seconds", r, q)));
      }
    }
    CHECK(sum_of(m, "gather_requests_total", {{"route", "/q"}, {"code", "503"}}) > 0);

    // Every section.
    for (const auto& route : routes) {
      for (const auto& section : label_values(m, "gather_section_duration_seconds_count", "section", {{"route", route}})) {
        INFO("route " << route << " section " << section);
        const label_set RS{{"data-route", route}, {"data-section", section}};
        const label_set rs{{"route", route}, {"section", section}};
        for (const char* status : {"ok", "timeout", "error", "rejected", "skipped"}) {
          label_set with_status = RS;
          with_status["data-status"] = status;
          label_set scraped = rs;
          scraped["status"] = status;
          CHECK(find_one(dom, "section_total", with_status).value() == sum_of(m, "gather_section_total", scraped));
        }
        CHECK(find_one(dom, "retries_total", RS).value() == sum_of(m, "gather_retries_total", rs));
        CHECK(find_one(dom, "degraded_total", RS).value() == sum_of(m, "gather_degraded_total", rs));
        const double won = sum_of(m, "gather_hedges_total", labels_with(rs, {{"result", "won"}}));
        CHECK(find_one(dom, "hedges_won_total", RS).value() == won);
        CHECK(find_one(dom, "hedged_attempts_total", RS).value() ==
              won + sum_of(m, "gather_hedges_total", labels_with(rs, {{"result", "lost"}})));
        CHECK(find_one(dom, "rejected_max_concurrent_total", RS).value() ==
              sum_of(m, "gather_rejected_total", labels_with(rs, {{"reason", "max_concurrent"}})));
        CHECK(find_one(dom, "rejected_circuit_open_total", RS).value() ==
              sum_of(m, "gather_rejected_total", labels_with(rs, {{"reason", "circuit_open"}})));
        CHECK(find_one(dom, "circuit_open", RS).value() == sum_of(m, "gather_circuit_open", rs));
        for (auto [metric, q] : {std::pair{"section_p50_ms", 0.5}, std::pair{"section_p99_ms", 0.99}}) {
          const double expected = 1000 * quantile(m, "gather_section_duration_seconds", rs, q);
          if (std::isnan(expected))
            CHECK(find_one(dom, metric, RS)["data-value"].empty());
          else
            CHECK(find_one(dom, metric, RS).value() == Approx(expected));
        }
        const double hits = sum_of(m, "gather_cache_events_total", labels_with(rs, {{"event", "hit"}}));
        const double lookups = hits + sum_of(m, "gather_cache_events_total", labels_with(rs, {{"event", "miss"}})) +
                               sum_of(m, "gather_cache_events_total", labels_with(rs, {{"event", "coalesced"}}));
        if (lookups > 0) {
          CHECK(find_one(dom, "cache_hits", RS).value() == hits);
          CHECK(find_one(dom, "cache_lookups", RS).value() == lookups);
          CHECK(find_one(dom, "cache_hit_ratio", RS).value() == Approx(hits / lookups));
        } else {
          CHECK(find_all(dom, "cache_hit_ratio", RS).empty());
        }
      }
    }
    // The route really produced each status the table shows, and the cache and retries worked.
    auto count = [&](const std::string& section, const std::string& status) {
      return sum_of(m, "gather_section_total", {{"route", "/p/{id}"}, {"section", section}, {"status", status}});
    };
    CHECK(count("base", "ok") > 0);
    CHECK(count("slow", "timeout") > 0);
    CHECK(count("broken", "error") > 0);
    CHECK(count("dep", "skipped") > 0);
    // The cache column is checked above whenever the gateway counted lookups; the fixed-scrape
    // test covers its arithmetic either way.
    if (sum_of(m, "gather_cache_events_total", {{"route", "/p/{id}"}, {"section", "base"}, {"event", "hit"}}) == 0)
      WARN("the gateway counted no cache hit for a section with cache_ttl_ms: the cache column was not compared");
    CHECK(sum_of(m, "gather_retries_total", {{"route", "/p/{id}"}, {"section", "broken"}}) > 0);
    CHECK(sum_of(m, "gather_rejected_total", {{"route", "/p/{id}"}, {"section", "broken"}, {"reason", "circuit_open"}}) > 0);
    CHECK(find_all(dom, "section_total", {{"data-route", "/p/{id}"}, {"data-status", "ok"}}).size() == 4);
  }
}

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
