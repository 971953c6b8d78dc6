// The upstreams as /metrics and /debug/upstreams show them (upstream_report.hpp).
#include "gather/ops/upstream_report.hpp"

#include "gather/ops/metrics.hpp"
#include "gather/ops/prometheus_text.hpp"

namespace gather {

namespace {

std::string label(const char* key, const std::string& value) {
  return std::string(key) + "=\"" + escape_label(value) + "\"";
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  write_family_header(out, name, type, help);
}

void line(std::string& out, const char* name, const std::string& labels, std::uint64_t value) {
  out += name;
  out += '{' + labels + "} " + std::to_string(value) + '\n';
}

const char* const lookup_results[] = {"ok", "error", "empty"};
const char* const probe_results[] = {"healthy", "unhealthy", "timeout"};

} // namespace

std::string upstream_metrics(const upstream_directory& upstreams) {
  std::string out;
  if (upstreams.empty())
    return out;
  std::vector<upstream_view> views;
  for (const auto& [name, table] : upstreams)
    views.push_back(table->view());
  family(out, "gather_upstream_endpoints", "gauge", "Endpoints of an upstream by state.");
  for (const auto& v : views) {
    std::uint64_t counts[4] = {0, 0, 0, 0};
    for (const auto& e : v.endpoints)
      ++counts[static_cast<int>(e.state)];
    for (int s = 0; s < 4; ++s)
      line(out, "gather_upstream_endpoints", label("upstream", v.name) + "," + label("state", to_string(static_cast<endpoint_state>(s))),
           counts[s]);
  }
  family(out, "gather_upstream_calls_total", "counter",
         "Calls to an upstream's endpoints by how they ended (failure: as ejection counts it).");
  for (const auto& v : views)
    for (const auto& e : v.endpoints) {
      const auto base = label("upstream", v.name) + "," + label("endpoint", e.address) + ",";
      line(out, "gather_upstream_calls_total", base + label("result", "ok"), e.ok);
      line(out, "gather_upstream_calls_total", base + label("result", "failure"), e.failure);
      line(out, "gather_upstream_calls_total", base + label("result", "other"), e.other);
    }
  family(out, "gather_upstream_ejections_total", "counter", "Endpoints ejected by their calls' failures.");
  for (const auto& v : views)
    line(out, "gather_upstream_ejections_total", label("upstream", v.name), v.ejections);
  family(out, "gather_upstream_lookups_total", "counter", "Lookups of an upstream's names by result.");
  for (const auto& v : views)
    for (int r = 0; r < 3; ++r)
      line(out, "gather_upstream_lookups_total", label("upstream", v.name) + "," + label("result", lookup_results[r]),
           v.lookups[r]);
  family(out, "gather_upstream_health_checks_total", "counter", "Health probes of an upstream's endpoints by result.");
  for (const auto& v : views)
    for (int r = 0; r < 3; ++r)
      line(out, "gather_upstream_health_checks_total",
           label("upstream", v.name) + "," + label("result", probe_results[r]), v.health_checks[r]);
  return out;
}

nlohmann::json upstream_report(const upstream_directory& upstreams) {
  auto all = nlohmann::json::object();
  for (const auto& [name, table] : upstreams) {
    const auto v = table->view();
    auto endpoints = nlohmann::json::array();
    for (const auto& e : v.endpoints)
      endpoints.push_back({{"address", e.address},
                           {"weight", e.weight},
                           {"state", to_string(e.state)},
                           {"in_flight", e.in_flight},
                           {"failures_in_row", e.failures_in_row},
                           {"ejected_until_ms", e.ejected_until_ms},
                           {"last_probe", e.last_probe < 0 ? nlohmann::json(nullptr)
                                                           : nlohmann::json(probe_results[e.last_probe])},
                           {"calls", {{"ok", e.ok}, {"failure", e.failure}, {"other", e.other}}}});
    all[name] = {{"balance", v.balance},
                 {"panic", v.panic},
                 {"ejections", v.ejections},
                 {"last_lookup", {{"ms", v.last_lookup_ms},
                                  {"result", v.last_lookup.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.last_lookup)}}},
                 {"endpoints", std::move(endpoints)}};
  }
  return {{"upstreams", std::move(all)}};
}

} // namespace gather
