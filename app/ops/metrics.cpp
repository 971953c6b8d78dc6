#include "gather/ops/metrics.hpp"
#include "gather/ops/prometheus_text.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"

#include <cstdio>

namespace gather {

namespace {

constexpr int lowest_status = 100;
constexpr int highest_status = 599;
constexpr std::size_t status_count = 5;  // section_status values
constexpr std::size_t source_count = 4;  // data_source values
constexpr std::size_t cache_event_count = 6;
const char* const cache_event_names[cache_event_count] = {"hit", "miss", "coalesced", "stale", "shared_hit", "shared_wait"};
const char* const hedge_results[2] = {"won", "lost"};
const char* const reject_reasons[2] = {"max_concurrent", "circuit_open"}; ///< by reject_reason
const char* const circuit_targets[3] = {"open", "half_open", "closed"};  ///< transitions' slots

/// `labels` plus one more label: `,key="value"` (the values here need no escaping).
std::string with_label(const std::string& labels, const char* key, const char* value) {
  return labels + "," + key + "=\"" + value + "\"";
}

void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

std::string number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  write_family_header(out, name, type, help);
}

void sample(std::string& out, const std::string& name, const std::string& labels, std::uint64_t value) {
  out += name;
  if (!labels.empty())
    out += '{' + labels + '}';
  out += ' ' + std::to_string(value) + '\n';
}

} // namespace

struct metrics::section_series {
  std::array<std::atomic<std::uint64_t>, status_count * source_count> outcomes{};
  latency_histogram duration;
  std::atomic<std::uint64_t> degraded{0};
  std::atomic<std::uint64_t> retries{0};
  std::array<std::atomic<std::uint64_t>, cache_event_count> cache{};
  std::array<std::atomic<std::uint64_t>, 2> hedges{};   ///< won, lost
  std::array<std::atomic<std::uint64_t>, 2> rejected{}; ///< by reject_reason
  std::atomic<std::uint64_t> budget_denied{0};
  std::atomic<std::uint8_t> circuit{0};                 ///< circuit_breaker::state
  std::array<std::atomic<std::uint64_t>, 3> transitions{}; ///< to open, half_open, closed
  std::array<std::atomic<std::uint64_t>, 17> grpc_calls{}; ///< by gRPC status code (OK..UNAUTHENTICATED)
};

struct metrics::route_series {
  std::string name;  ///< the route's path (or no_route_label): what a reload finds it by
  std::string label; ///< `route="..."`, escaped once
  std::array<std::atomic<std::uint64_t>, highest_status - lowest_status + 1> by_status{};
  std::atomic<std::uint64_t> errors{0};
  std::array<std::atomic<std::uint64_t>, 2> streamed{}; ///< ndjson, sse
  latency_histogram duration;
  std::vector<std::unique_ptr<section_series>> sections;
  std::vector<std::string> section_names;  ///< what a reload finds a section by
  std::vector<std::string> section_labels; ///< `route="...",section="..."`
  std::array<std::atomic<std::uint64_t>, 5> auth{}; ///< by auth_result
  std::atomic<std::uint64_t> rate_limited{0};
};

void latency_histogram::observe(std::chrono::microseconds d) {
  const double seconds = static_cast<double>(d.count()) / 1e6;
  std::size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i])
    ++i;
  add(buckets_[i]);
  add(sum_us_, static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.count())));
  add(count_);
}

void latency_histogram::write(std::string& out, const std::string& name, const std::string& labels) const {
  std::uint64_t cumulative = 0;
  const std::string prefix = labels.empty() ? "" : labels + ",";
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    auto le = i < bounds.size() ? number(bounds[i]) : std::string{"+Inf"};
    sample(out, name + "_bucket", prefix + "le=\"" + le + "\"", cumulative);
  }
  out += name + "_sum";
  if (!labels.empty())
    out += '{' + labels + '}';
  out += ' ' + number(static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6) + '\n';
  sample(out, name + "_count", labels, count_.load(std::memory_order_relaxed));
}

void write_family_header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

std::string escape_label(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

metrics::registry::registry() = default;
metrics::registry::~registry() = default;

metrics::route_series& metrics::registry::route(const std::string& name) {
  for (auto& series : routes_)
    if (series->name == name)
      return *series;
  auto& series = *routes_.emplace_back(std::make_unique<route_series>());
  series.name = name;
  series.label = "route=\"" + escape_label(name) + "\"";
  return series;
}

metrics::section_series& metrics::registry::section(route_series& route, const std::string& name) {
  for (std::size_t s = 0; s < route.section_names.size(); ++s)
    if (route.section_names[s] == name)
      return *route.sections[s];
  route.section_names.push_back(name);
  route.section_labels.push_back(route.label + ",section=\"" + escape_label(name) + "\"");
  return *route.sections.emplace_back(std::make_unique<section_series>());
}

metrics::metrics(const config& cfg, registry& all) : all_(all) {
  std::lock_guard<std::mutex> lock(all.mutex_);
  for (std::size_t r = 0; r <= cfg.routes.size(); ++r) {
    const auto name = r < cfg.routes.size() ? cfg.routes[r].path : std::string{no_route_label};
    route_handles handles;
    handles.series = &all.route(name);
    if (r < cfg.routes.size())
      for (const auto& section : cfg.routes[r].sections)
        handles.sections.push_back(&all.section(*handles.series, section.name));
    routes_.push_back(std::move(handles));
  }
}

metrics::~metrics() = default;

void metrics::request_done(std::size_t route, int status, std::chrono::microseconds took) {
  auto& series = *routes_[std::min(route, routes_.size() - 1)].series;
  if (status >= lowest_status && status <= highest_status)
    add(series.by_status[static_cast<std::size_t>(status - lowest_status)]);
  if (status != 200) // a CORS preflight's 204 too: the metric counts what did not get a 200
    add(series.errors);
  series.duration.observe(took);
}

void metrics::section_done(std::size_t route, std::size_t section, const section_outcome& outcome,
                           bool degraded) {
  auto& series = *routes_[route].sections[section];
  add(series.outcomes[static_cast<std::size_t>(outcome.status) * source_count +
                      static_cast<std::size_t>(outcome.source)]);
  series.duration.observe(std::chrono::milliseconds{outcome.ms});
  if (degraded)
    add(series.degraded);
}

void metrics::grpc_call(std::size_t route, std::size_t section, int code) {
  auto& calls = routes_[route].sections[section]->grpc_calls;
  add(calls[code >= 0 && static_cast<std::size_t>(code) < calls.size() ? code : grpc::unknown]);
}

void metrics::retry(std::size_t route, std::size_t section) {
  add(routes_[route].sections[section]->retries);
}

void metrics::cache(std::size_t route, std::size_t section, cache_event event) {
  add(routes_[route].sections[section]->cache[static_cast<std::size_t>(event)]);
}

void metrics::hedge(std::size_t route, std::size_t section, bool won) {
  add(routes_[route].sections[section]->hedges[won ? 0 : 1]);
}

void metrics::rejected(std::size_t route, std::size_t section, reject_reason why) {
  add(routes_[route].sections[section]->rejected[static_cast<std::size_t>(why)]);
}

void metrics::budget_denied(std::size_t route, std::size_t section) {
  add(routes_[route].sections[section]->budget_denied);
}

void metrics::streamed(std::size_t route, answer_format format) {
  if (format != answer_format::json)
    add(routes_[std::min(route, routes_.size() - 1)].series->streamed[format == answer_format::sse ? 1 : 0]);
}

void metrics::circuit_moved(std::size_t route, std::size_t section, circuit_breaker::state to) {
  auto& series = *routes_[route].sections[section];
  series.circuit.store(static_cast<std::uint8_t>(to), std::memory_order_relaxed);
  const std::size_t slot = to == circuit_breaker::state::open ? 0 : to == circuit_breaker::state::half_open ? 1 : 2;
  add(series.transitions[slot]);
}

void metrics::auth(std::size_t route, auth_result result) {
  add(routes_[std::min(route, routes_.size() - 1)].series->auth[static_cast<std::size_t>(result)]);
}

void metrics::rate_limited(std::size_t route) {
  add(routes_[std::min(route, routes_.size() - 1)].series->rate_limited);
}

std::string metrics::exposition(const process_figures& process) const {
  std::string out;
  out.reserve(16384);
  std::lock_guard<std::mutex> lock(all_.mutex_); // a reload may be adding series
  const auto& all = all_.routes_; // every route ever configured, not only this generation's
  header(out, "gather_requests_total", "counter", "Requests answered, by route and HTTP status.");
  for (const auto& r : all)
    for (std::size_t i = 0; i < r->by_status.size(); ++i)
      if (auto n = r->by_status[i].load(std::memory_order_relaxed))
        sample(out, "gather_requests_total",
               r->label + ",code=\"" + std::to_string(i + lowest_status) + "\"", n);
  header(out, "gather_request_errors_total", "counter", "Requests that did not get a 200.");
  for (const auto& r : all)
    sample(out, "gather_request_errors_total", r->label, r->errors.load(std::memory_order_relaxed));
  header(out, "gather_request_duration_seconds", "histogram", "Time from arrival to answer.");
  for (const auto& r : all)
    r->duration.write(out, "gather_request_duration_seconds", r->label);

  header(out, "gather_streamed_total", "counter",
         "Progressive answers begun (their head sent), by route and format (ndjson, sse).");
  for (const auto& r : all)
    for (auto format : {answer_format::ndjson, answer_format::sse})
      if (auto n = r->streamed[format == answer_format::sse ? 1 : 0].load(std::memory_order_relaxed))
        sample(out, "gather_streamed_total", with_label(r->label, "format", to_string(format)), n);

  header(out, "gather_section_total", "counter", "Section outcomes, by status and data source.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t st = 0; st < status_count; ++st)
        for (std::size_t src = 0; src < source_count; ++src)
          if (auto n = r->sections[s]->outcomes[st * source_count + src].load(std::memory_order_relaxed))
            sample(out, "gather_section_total",
                   r->section_labels[s] + ",status=\"" + to_string(static_cast<section_status>(st)) +
                     "\",source=\"" + to_string(static_cast<data_source>(src)) + "\"",
                   n);
  header(out, "gather_section_duration_seconds", "histogram", "A section's whole time, backoff included.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      r->sections[s]->duration.write(out, "gather_section_duration_seconds", r->section_labels[s]);
  header(out, "gather_degraded_total", "counter", "Pages served 200 without this section's live data.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      sample(out, "gather_degraded_total", r->section_labels[s],
             r->sections[s]->degraded.load(std::memory_order_relaxed));
  header(out, "gather_retries_total", "counter", "Downstream attempts after the first.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      sample(out, "gather_retries_total", r->section_labels[s],
             r->sections[s]->retries.load(std::memory_order_relaxed));
  header(out, "gather_grpc_calls_total", "counter",
         "gRPC calls of gRPC sections by the status they ended with (a timeout DEADLINE_EXCEEDED, no connection UNAVAILABLE).");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t c = 0; c < r->sections[s]->grpc_calls.size(); ++c)
        if (const auto n = r->sections[s]->grpc_calls[c].load(std::memory_order_relaxed))
          sample(out, "gather_grpc_calls_total",
                 r->section_labels[s] + ",code=\"" + grpc::code_name(static_cast<int>(c)) + "\"", n);
  header(out, "gather_cache_events_total", "counter", "Section cache lookups: hit, miss, coalesced, stale (shared_hit, shared_wait: the shared store).");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t e = 0; e < cache_event_count; ++e) {
        const auto n = r->sections[s]->cache[e].load(std::memory_order_relaxed);
        // The shared store's events only where they happen (sections with cache_shared).
        if (n != 0 || e < static_cast<std::size_t>(cache_event::shared_hit))
          sample(out, "gather_cache_events_total",
                 r->section_labels[s] + ",event=\"" + cache_event_names[e] + "\"", n);
      }

  // docs/security.md: who came in. Only routes that counted some (routes without auth or
  // rate_limit never do).
  header(out, "gather_auth_total", "counter", "Bearer-token checks, by result: ok, missing, invalid, expired, forbidden.");
  static constexpr const char* auth_results[] = {"ok", "missing", "invalid", "expired", "forbidden"};
  for (const auto& r : all)
    for (std::size_t i = 0; i < r->auth.size(); ++i)
      if (auto n = r->auth[i].load(std::memory_order_relaxed))
        sample(out, "gather_auth_total", with_label(r->label, "result", auth_results[i]), n);
  header(out, "gather_rate_limited_total", "counter", "Requests refused 429 by the route's rate limit.");
  for (const auto& r : all)
    if (auto n = r->rate_limited.load(std::memory_order_relaxed))
      sample(out, "gather_rate_limited_total", r->label, n);

  // docs/resilience.md: hedges, rejections, the retry budget and circuits, for every section.
  header(out, "gather_hedges_total", "counter",
         "Attempts with hedge calls that ended ok: won by a hedge call, or by the first call (lost).");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t w = 0; w < 2; ++w)
        sample(out, "gather_hedges_total", with_label(r->section_labels[s], "result", hedge_results[w]),
               r->sections[s]->hedges[w].load(std::memory_order_relaxed));
  header(out, "gather_rejected_total", "counter", "Sections ended rejected with no call made, by reason.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t w = 0; w < 2; ++w)
        sample(out, "gather_rejected_total", with_label(r->section_labels[s], "reason", reject_reasons[w]),
               r->sections[s]->rejected[w].load(std::memory_order_relaxed));
  header(out, "gather_retry_budget_denied_total", "counter",
         "Retries and hedges not made because the downstream's retry budget was spent.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      sample(out, "gather_retry_budget_denied_total", r->section_labels[s],
             r->sections[s]->budget_denied.load(std::memory_order_relaxed));
  header(out, "gather_circuit_open", "gauge", "1 while the section's circuit is open or half-open, else 0.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      sample(out, "gather_circuit_open", r->section_labels[s],
             r->sections[s]->circuit.load(std::memory_order_relaxed) == 0 ? 0 : 1);
  header(out, "gather_circuit_transitions_total", "counter", "Circuit state changes, by the state entered.");
  for (const auto& r : all)
    for (std::size_t s = 0; s < r->sections.size(); ++s)
      for (std::size_t t = 0; t < 3; ++t)
        sample(out, "gather_circuit_transitions_total", with_label(r->section_labels[s], "to", circuit_targets[t]),
               r->sections[s]->transitions[t].load(std::memory_order_relaxed));

  header(out, "gather_inflight_requests", "gauge", "Requests admitted and not yet answered.");
  sample(out, "gather_inflight_requests", "", static_cast<std::uint64_t>(std::max<std::int64_t>(0, process.inflight_requests)));
  header(out, "gather_overloaded_total", "counter", "Requests refused with 503 because max_inflight was reached.");
  sample(out, "gather_overloaded_total", "", process.overloaded);
  header(out, "gather_late_replies_total", "counter", "Replies that arrived after their request was answered.");
  sample(out, "gather_late_replies_total", "", process.late_replies);
  header(out, "gather_actors_running", "gauge", "Actors running in the gateway's actor system.");
  sample(out, "gather_actors_running", "", process.actors_running);
  header(out, "gather_downstream_inflight", "gauge", "Downstream HTTP transfers in flight.");
  sample(out, "gather_downstream_inflight", "", process.downstream_inflight);
  header(out, "gather_spans_dropped_total", "counter", "Spans dropped because the tracing export queue was full.");
  sample(out, "gather_spans_dropped_total", "", process.spans_dropped);
  header(out, "gather_spans_exported_total", "counter", "Spans an OTLP collector accepted.");
  sample(out, "gather_spans_exported_total", "", process.spans_exported);
  header(out, "gather_span_exports_failed_total", "counter", "Span export requests that failed (no answer, timeout, not 2xx); their spans are lost.");
  sample(out, "gather_span_exports_failed_total", "", process.span_exports_failed);
  header(out, "gather_node_up", "gauge", "1 when the cluster node is connected, else 0.");
  for (const auto& [node, up] : process.nodes)
    sample(out, "gather_node_up", "node=\"" + escape_label(node) + "\"", up ? 1 : 0);
  header(out, "gather_config_reloads_total", "counter", "Configuration reloads (SIGHUP), by result.");
  sample(out, "gather_config_reloads_total", "result=\"ok\"", process.config_reloads_ok);
  sample(out, "gather_config_reloads_total", "result=\"invalid\"", process.config_reloads_invalid);
  header(out, "gather_connections_total", "counter",
         "Inbound connections by the protocol they spoke (counted at their first request).");
  for (std::size_t p = 0; p < process.connections_by_proto.size(); ++p)
    sample(out, "gather_connections_total", std::string{"proto=\""} + inbound_proto_names[p] + "\"",
           process.connections_by_proto[p]);
  header(out, "gather_http2_abuse_total", "counter",
         "HTTP/2 connections ended with GOAWAY for their behaviour, by the bound crossed.");
  for (std::size_t r = 1; r < process.h2_abuse.size(); ++r) // 0 is none
    sample(out, "gather_http2_abuse_total", std::string{"reason=\""} + h2_abuse_names[r] + "\"",
           process.h2_abuse[r]);
  if (process.shared && process.shared->up.load() >= 0) {
    const shared_figures& shared = *process.shared;
    header(out, "gather_shared_up", "gauge", "1 when the shared store answers, else 0.");
    sample(out, "gather_shared_up", "", shared.up.load() == 1 ? 1 : 0);
    header(out, "gather_shared_gateways", "gauge", "Gateways sharing the store, as last seen.");
    sample(out, "gather_shared_gateways", "", shared.gateways.load());
    header(out, "gather_shared_ops_total", "counter", "Shared store operations, by kind and result.");
    for (std::size_t o = 0; o < shared.ops.size(); ++o)
      for (std::size_t r = 0; r < shared.ops[o].size(); ++r)
        sample(out, "gather_shared_ops_total",
               std::string{"op=\""} + store_op_names[o] + "\",result=\"" + store_result_names[r] + "\"",
               shared.ops[o][r].load(std::memory_order_relaxed));
  }
  return out;
}

} // namespace gather
