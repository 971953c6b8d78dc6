#include "gather/resilience/section_guards.hpp"

namespace gather {

std::string origin_of(const std::string& url) {
  const auto scheme_end = url.find("://");
  const auto host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const auto host_end = url.find_first_of("/?#", host_start);
  auto authority = url.substr(host_start, host_end == std::string::npos ? std::string::npos
                                                                       : host_end - host_start);
  if (const auto at = authority.rfind('@'); at != std::string::npos)
    authority.erase(0, at + 1);
  const bool has_port = !authority.empty() && authority.back() != ']' &&
                        authority.find(':', authority.rfind(']') == std::string::npos
                                                ? 0
                                                : authority.rfind(']')) != std::string::npos;
  if (has_port)
    return authority;
  const bool https = url.compare(0, 8, "https://") == 0;
  return authority + (https ? ":443" : ":80");
}

section_guards::section_guards(const config& cfg) : policy_(cfg.retry_budget) {
  sections_.resize(cfg.routes.size());
  batch_budgets_.resize(cfg.routes.size(), nullptr);
  for (std::size_t r = 0; r < cfg.routes.size(); ++r) {
    const auto& route = cfg.routes[r];
    if (route.batch)
      batch_budgets_[r] = &budget_for(cfg, route.batch->grpc ? route.batch->grpc->target
                                                        : route.batch->url.source);
    for (const auto& section : route.sections)
      sections_[r].push_back(std::make_unique<section_guard>(
          section, budget_for(cfg, section.grpc ? section.grpc->target : section.url.source)));
  }
}

retry_budget& section_guards::budget_for(const config& cfg, const std::string& url) {
  // An upstream's calls share one budget, whatever endpoint each went to (docs/upstreams.md).
  const auto* up = cfg.upstream_of(url);
  auto& slot = budgets_[up ? "upstream:" + up->name : origin_of(url)];
  if (!slot)
    slot = std::make_unique<retry_budget>(policy_);
  return *slot;
}

} // namespace gather
