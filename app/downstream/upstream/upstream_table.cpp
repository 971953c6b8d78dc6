// An upstream's table of endpoints (upstream_table.hpp): its settings from the config, the set
// from each lookup's answer, its endpoints' targets, the health probes' verdicts and the views the
// operations endpoints read. The pick and a call's end are upstream_balancer.cpp's.
#include <algorithm>
#include <map>

#include <boost/asio/ip/address.hpp>
#include <nlohmann/json.hpp>

#include "upstream/endpoint_tls.hpp"
#include "pool/retire_epoch.hpp"
#include "upstream/upstream_set_parts.hpp"

namespace gather {

namespace {

/// A replaced set is freed once this has passed: no pick (a few microseconds) still reads it.

bool is_literal(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::atomic<std::uint64_t>& retire_epoch() {
  static std::atomic<std::uint64_t> epoch{0};
  return epoch;
}

const char* to_string(endpoint_state state) {
  switch (state) {
    case endpoint_state::available: return "available";
    case endpoint_state::ejected: return "ejected";
    case endpoint_state::unhealthy: return "unhealthy";
    case endpoint_state::leaving: return "leaving";
  }
  return "?";
}

std::string endpoint_text(const std::string& address, std::uint16_t port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

std::vector<found_endpoint> literal_endpoints(const upstream_config& cfg) {
  std::vector<found_endpoint> out;
  for (const auto& entry : cfg.endpoints)
    if (is_literal(entry.host))
      out.push_back({entry.host, static_cast<std::uint16_t>(entry.port), static_cast<std::uint32_t>(entry.weight), ""});
  return out;
}

upstream_table::upstream_table(const upstream_config& cfg, log_sink log) : name_(cfg.name), log_(std::move(log)) {
  auto nowhere = std::make_shared<call_target>();
  nowhere->detail = "upstream " + name_ + " has no endpoint (until its first lookup answers)";
  nowhere_ = std::move(nowhere);
  settings_ = std::make_shared<settings>();
  std::string ignored; // a TLS that cannot be used leaves no settings: the reload reports it
  configure(cfg, ignored);
}

upstream_table::~upstream_table() = default;

std::shared_ptr<const call_target> upstream_table::target_of(const found_endpoint& found) const {
  const auto& s = *settings_;
  auto target = std::make_shared<call_target>();
  target->address = found.address;
  target->port = found.port;
  target->server_name = !s.server_name.empty() ? s.server_name : !found.name.empty() ? found.name : found.address;
  // Envoy sends the cluster's host as Host by default; under TLS the name the certificate is
  // checked for is the one the endpoint knows itself by.
  target->authority = s.tls ? target->server_name : name_;
  target->tls = s.tls;
  target->bounds = s.bounds;
  target->pool_key = name_ + "|" + endpoint_text(found.address, found.port) + "|" +
                     (s.tls ? s.tls_tag + "|" + target->server_name : std::string{"plain"}) + "|" +
                     std::to_string(s.bounds.idle_timeout.count()) + "/" + std::to_string(s.bounds.max_age.count());
  return target;
}

std::shared_ptr<upstream_endpoint> upstream_table::make_endpoint(const found_endpoint& found) const {
  auto e = std::make_shared<upstream_endpoint>();
  e->text = endpoint_text(found.address, found.port);
  e->found = found;
  e->weight = std::max<std::uint32_t>(1, found.weight);
  e->target = target_of(found);
  return e;
}

bool upstream_table::configure(const upstream_config& cfg, std::string& error) {
  auto next = std::make_shared<settings>();
  if (cfg.tls) {
    next->tls = make_endpoint_tls(*cfg.tls, error);
    if (!next->tls)
      return false;
    next->tls_tag = tls_tag(*next->tls);
    next->server_name = cfg.tls->server_name;
  }
  next->bounds.idle_timeout = cfg.idle_timeout;
  next->bounds.max_age = cfg.max_connection_age;
  next->literal = cfg.literal_only();
  balance_ = static_cast<int>(cfg.balance);
  consecutive_failures_ = cfg.outlier.consecutive_failures;
  eject_ms_ = cfg.outlier.eject.count();
  max_ejected_percent_ = cfg.outlier.max_ejected_percent;
  bool renew = false, was_literal = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto& old = *settings_;
    renew = old.tls_tag != next->tls_tag || old.server_name != next->server_name ||
            old.bounds.idle_timeout != next->bounds.idle_timeout || old.bounds.max_age != next->bounds.max_age;
    was_literal = old.literal;
    settings_ = std::move(next);
  }
  if (renew) {
    // Targets of other TLS or bounds: endpoints made anew (their old connections close when idle).
    std::vector<found_endpoint> now;
    for (const auto& e : endpoints())
      if (!e->leaving)
        now.push_back(e->found);
    std::lock_guard<std::mutex> lock(mutex_);
    auto set = std::make_shared<endpoint_set>();
    for (const auto& found : now) {
      auto e = make_endpoint(found);
      e->id = next_id_++;
      set->members.push_back(std::move(e));
    }
    if (const auto old = live())
      for (const auto& e : old->members) {
        e->leaving = true;
        e->target->retired = true;
        leaving_.push_back(e);
      }
    publish(std::move(set));
    retire_epoch().fetch_add(1, std::memory_order_relaxed);
  }
  if (settings_->literal) // its own answer, never looked up (nor counted as a lookup)
    replace(literal_endpoints(cfg));
  else if (was_literal) // now a source that needs its lookups: nothing until they answer
    replace({});
  return true;
}

void upstream_table::take(const lookup_answer& answer) {
  const auto index = static_cast<std::size_t>(answer.result);
  lookups_[index].fetch_add(1, std::memory_order_relaxed);
  last_lookup_ms_ = unix_ms_now();
  last_lookup_ = static_cast<int>(answer.result);
  if (answer.result != lookup_result::ok) {
    log(answer.result == lookup_result::empty ? "upstream_lookup_empty" : "upstream_lookup_failed",
        answer.detail + "; the last good set of endpoints is kept");
    return;
  }
  replace(answer.endpoints);
}

void upstream_table::replace(const std::vector<found_endpoint>& found_now) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::shared_ptr<upstream_endpoint>> old;
  if (const auto set = live())
    for (const auto& e : set->members)
      old.emplace(e->text, e);
  auto set = std::make_shared<endpoint_set>();
  for (const auto& found : found_now) {
    const auto text = endpoint_text(found.address, found.port);
    if (std::any_of(set->members.begin(), set->members.end(), [&](const auto& e) { return e->text == text; }))
      continue; // one endpoint per address and port
    auto it = old.find(text);
    if (it != old.end()) { // it stays: its state, its connections
      it->second->weight = std::max<std::uint32_t>(1, found.weight);
      set->members.push_back(std::move(it->second));
      old.erase(it);
      continue;
    }
    auto e = make_endpoint(found);
    e->id = next_id_++;
    set->members.push_back(std::move(e));
  }
  for (auto& [text, e] : old) { // gone from the answer: no new call, connections close when done
    e->leaving = true;
    e->target->retired = true;
    leaving_.push_back(std::move(e));
  }
  publish(std::move(set));
  if (!old.empty())
    retire_epoch().fetch_add(1, std::memory_order_relaxed);
}

void upstream_table::publish(std::shared_ptr<endpoint_set> next) {
  // (Under mutex_.) The schedule of the new weights; then the set goes live for every loop.
  auto& set = *next;
  std::vector<std::uint32_t> weights;
  for (const auto& e : set.members)
    weights.push_back(e->weight.load());
  set.schedule = smooth_schedule(weights);
  std::atomic_store_explicit(&live_, std::shared_ptr<const endpoint_set>(std::move(next)),
                             std::memory_order_release);
  leaving_.erase(std::remove_if(leaving_.begin(), leaving_.end(),
                                [](const auto& e) { return e->in_flight.load() <= 0; }),
                 leaving_.end());
}

void upstream_table::mark_health(const std::string& address, std::uint16_t port, bool healthy) {
  const auto text = endpoint_text(address, port);
  for (const auto& e : endpoints())
    if (e->text == text)
      e->unhealthy = !healthy;
}

void upstream_table::count_probe(const std::string& address, std::uint16_t port, health_result result) {
  probes_[static_cast<std::size_t>(result)].fetch_add(1, std::memory_order_relaxed);
  const auto text = endpoint_text(address, port);
  for (const auto& e : endpoints())
    if (e->text == text)
      e->last_probe = static_cast<std::int8_t>(result);
}

std::vector<std::shared_ptr<upstream_endpoint>> upstream_table::endpoints() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<upstream_endpoint>> out;
  if (const auto set = live())
    out = set->members;
  for (const auto& e : leaving_)
    if (e->in_flight.load() > 0)
      out.push_back(e);
  return out;
}

upstream_view upstream_table::view() const {
  upstream_view out;
  out.name = name_;
  out.balance = balance_.load() == static_cast<int>(balance_kind::round_robin) ? "round_robin" : "least_request";
  const auto now = steady_ns();
  const auto unix_now = unix_ms_now();
  for (const auto& e : endpoints()) {
    upstream_view::endpoint_row row;
    row.address = e->text;
    row.weight = e->weight.load();
    row.state = e->state(now);
    row.in_flight = e->in_flight.load();
    row.failures_in_row = e->failures_in_row.load();
    const auto until = e->ejected_until.load();
    row.ejected_until_ms = until > now ? unix_now + (until - now) / 1000000 : 0;
    row.last_probe = e->last_probe.load();
    row.ok = e->calls_ok.load();
    row.failure = e->calls_failure.load();
    row.other = e->calls_other.load();
    out.endpoints.push_back(std::move(row));
  }
  out.ejections = ejections_.load();
  for (std::size_t i = 0; i < 3; ++i) {
    out.lookups[i] = lookups_[i].load();
    out.health_checks[i] = probes_[i].load();
  }
  out.last_lookup_ms = last_lookup_ms_.load();
  static const char* const results[] = {"ok", "error", "empty"};
  const auto last = last_lookup_.load();
  out.last_lookup = last < 0 ? "" : results[last];
  out.panic = panic_.load();
  return out;
}

void upstream_table::log(const std::string& event, const std::string& detail) const {
  if (!log_)
    return;
  using namespace std::chrono;
  nlohmann::ordered_json line = {
      {"event", event},
      {"ts", duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6},
      {"upstream", name_},
      {"detail", detail}};
  log_(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace gather
