#include "gather/actors/serving_config.hpp"

#include <algorithm>
#include <cctype>

#include "gather/actors/section_cache.hpp"
#include "gather/downstream/grpc/grpc_reflection.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace gather {

namespace {

std::vector<std::vector<std::string>> cache_scopes_of(const config& cfg) {
  std::vector<std::vector<std::string>> scopes;
  scopes.reserve(cfg.routes.size());
  for (const auto& route : cfg.routes) {
    auto& sections = scopes.emplace_back();
    for (const auto& section : route.sections)
      sections.push_back(cache_scope(route.path, section));
  }
  return scopes;
}

std::string lower(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

millis longest_deadline_of(const config& cfg) {
  millis longest{0};
  for (const auto& route : cfg.routes)
    longest = std::max(longest, route.batch ? route.batch->deadline : route.deadline);
  return longest;
}

upstream_directory upstreams_of(const config& cfg, upstream_registry* registry) {
  if (registry)
    return registry->apply(cfg);
  upstream_directory out; // a tool's or a test's generation: tables of its own
  for (const auto& up : cfg.upstreams)
    out.emplace(up.name, std::make_shared<upstream_table>(up));
  return out;
}

std::shared_ptr<upstream_table> table_of(const config& cfg, const upstream_directory& tables, const std::string& url) {
  const auto* up = cfg.upstream_of(url);
  if (!up)
    return nullptr;
  auto it = tables.find(up->name);
  return it == tables.end() ? nullptr : it->second;
}

} // namespace

serving_config::serving_config(config c, std::uint64_t n, metrics::registry& series,
                               std::shared_ptr<const admission_gates> g, reflection_registry* reflection,
                               std::shared_ptr<shared_store> s, upstream_registry* upstream_tables)
  : cfg(std::move(c)),
    number(n),
    counters(cfg, series),
    cache_scopes(cache_scopes_of(cfg)),
    longest_deadline(longest_deadline_of(cfg)),
    guards(cfg),
    deadline_header_lower(lower(cfg.deadline_header)),
    gates(std::move(g)),
    reflected(reflection && has_reflection(cfg) ? std::make_unique<const live_catalog>(cfg, *reflection)
                                                : nullptr),
    store(std::move(s)),
    upstreams(upstreams_of(cfg, upstream_tables)) {
  section_upstreams_.resize(cfg.routes.size());
  batch_upstreams_.resize(cfg.routes.size());
  section_origins_.resize(cfg.routes.size());
  for (std::size_t r = 0; r < cfg.routes.size(); ++r) {
    const auto& route = cfg.routes[r];
    for (const auto& section : route.sections) {
      section_upstreams_[r].push_back(table_of(cfg, upstreams, section.grpc ? section.grpc->target : section.url.source));
      const bool plain = !section.grpc && !section_upstreams_[r].back();
      section_origins_[r].push_back(plain ? split_template_origin(section.url.source) : nullptr);
    }
    if (route.batch)
      batch_upstreams_[r] = table_of(cfg, upstreams, route.batch->grpc ? route.batch->grpc->target : route.batch->url.source);
  }
}

serving_config::~serving_config() = default;

std::shared_ptr<const proto_catalog> serving_config::descriptors() const {
  return reflected ? reflected->current() : cfg.descriptors;
}

void serving_config::unknown_method(const grpc_call_config& call) const {
  if (reflected)
    reflected->unknown(call);
}

serving_config_slot::serving_config_slot(std::shared_ptr<const serving_config> first)
  : current_(std::move(first)), number_(current_->number), longest_deadline_(current_->longest_deadline) {
}

std::shared_ptr<const serving_config> serving_config_slot::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

void serving_config_slot::refresh(std::shared_ptr<const serving_config>& held) const {
  // Numbers only grow and each is installed once: equal numbers mean the same generation.
  if (held && held->number == number_.load(std::memory_order_acquire))
    return;
  held = current();
}

void serving_config_slot::install(std::shared_ptr<const serving_config> next) {
  std::shared_ptr<const serving_config> previous; // released outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  longest_deadline_ = std::max(longest_deadline_, next->longest_deadline);
  previous = std::move(current_);
  current_ = std::move(next);
  number_.store(current_->number, std::memory_order_release);
}

millis serving_config_slot::longest_deadline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return longest_deadline_;
}

} // namespace gather
