#include "gather/resilience/section_guard.hpp"

#include <algorithm>

namespace gather {

section_guard::section_guard(const section_config& section, retry_budget& budget_of_host)
  : hedge(section.hedge), bulkhead(section.max_concurrent), budget(budget_of_host) {
  if (section.circuit)
    circuit.emplace(*section.circuit);
  if (hedge && hedge->percentile)
    latencies.emplace(*hedge->percentile);
}

std::optional<std::chrono::microseconds> section_guard::hedge_delay() const {
  if (!hedge)
    return std::nullopt;
  if (hedge->after)
    return std::chrono::duration_cast<std::chrono::microseconds>(*hedge->after);
  auto measured = latencies->percentile();
  if (!measured)
    return std::nullopt;
  return std::max<std::chrono::microseconds>(*measured, hedge->min_delay);
}

} // namespace gather
