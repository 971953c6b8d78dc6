// What the dashboard's browser tests (tests/ops/dashboard_*_test.cpp) share: a paced proxy and
// screenshots, the figures read back from the DOM Chromium dumped, and /metrics parsed the way
// the page reads it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/chromium.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

namespace gather::test::dashboard_support {

inline bool update_screenshots() {
  const char* v = std::getenv("GATHER_UPDATE_SCREENSHOT");
  return v && std::string{v} == "1";
}

inline std::filesystem::path docs_dir() {
  return std::filesystem::path{GATHER_SOURCE_DIR} / "docs";
}

/// Serves the gateway's /dashboard, and its /metrics and /debug/actors each after `pace` of real
/// time. Under --virtual-time-budget the page's clock stands still while a fetch is pending and
/// races ahead otherwise, so against the gateway itself its "per second" rates are per virtual
/// second. Through this proxy a virtual second between polls costs about one real second, and
/// the screenshots show real rates. (It also shows that the page's relative URLs follow a proxy.)
class paced_proxy {
public:
  paced_proxy(int gateway_port, std::chrono::milliseconds pace) {
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

inline void screenshot(int gateway_port, const std::filesystem::path& file,
                       const std::string& size = "1400,1000") {
  paced_proxy proxy{gateway_port, std::chrono::milliseconds{900}};
  const std::filesystem::path shot = temp_file("", ".png"); // replaces `file` only once it is complete
  std::filesystem::remove(shot);
  run_chromium({"--virtual-time-budget=6000", "--window-size=" + size, "--screenshot=" + shot.string(),
                proxy.url()},
               [&](const browser_result&) {
                 return std::filesystem::exists(shot) && std::filesystem::file_size(shot) > 10000;
               });
  std::filesystem::copy_file(shot, file, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(shot);
}

// ------------------------------------------------------------------ reading the dumped DOM

inline std::string decode_entities(const std::string& s) {
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
inline std::vector<drawn> drawn_figures(const std::string& dom) {
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

inline label_set labels_with(label_set l, const label_set& more) {
  l.insert(more.begin(), more.end());
  return l;
}

inline std::vector<const drawn*> find_all(const std::vector<drawn>& figures, const std::string& metric,
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

inline const drawn& find_one(const std::vector<drawn>& figures, const std::string& metric, const label_set& want = {}) {
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

inline std::vector<metric_sample> parse_metrics(const std::string& text) {
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

inline double sum_of(const std::vector<metric_sample>& samples, const std::string& name, const label_set& want = {}) {
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

inline std::vector<std::string> label_values(const std::vector<metric_sample>& samples, const std::string& name,
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
inline double quantile(const std::vector<metric_sample>& samples, const std::string& name, const label_set& want, double q) {
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

inline std::string escape_label_value(const std::string& v) {
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

inline std::string scrape_text(const running_gateway& gw) {
  auto r = gw.get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

/// The counters only (gauges such as actors_running move on their own).
inline std::string counters_of(const std::string& text) {
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

inline nlohmann::json fallback_section(const std::string& name, const std::string& url, int timeout_ms,
                                      nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json s = {
    {"name", name}, {"url", url}, {"timeout_ms", timeout_ms}, {"fallback", nlohmann::json::object()}};
  for (auto& [k, v] : extra.items())
    s[k] = v;
  return s;
}

} // namespace gather::test::dashboard_support
