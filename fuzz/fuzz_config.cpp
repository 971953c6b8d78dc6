// Fuzzes config parsing and validation: load_config() on arbitrary text.
// Invariants: exactly one of value / problems; every problem names a JSON path ("<path>: what");
// a valid config has routes, and each route's resolve order covers every section once.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "gather/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const gather::config_result result = gather::load_config(text);
  FUZZ_CHECK(result.value.has_value() != !result.problems.empty());
  for (const std::string& problem : result.problems)
    FUZZ_CHECK(problem.find(": ") != std::string::npos);
  if (!result.value)
    return 0;
  const gather::config& cfg = *result.value;
  FUZZ_CHECK(!cfg.routes.empty());
  for (const gather::route_config& route : cfg.routes) {
    FUZZ_CHECK(route.batch.has_value() == route.sections.empty());
    FUZZ_CHECK(route.resolve_order.size() == route.sections.size());
    std::vector<bool> seen(route.sections.size(), false);
    for (const std::size_t index : route.resolve_order) {
      FUZZ_CHECK(index < route.sections.size() && !seen[index]);
      seen[index] = true;
      for (const std::size_t dep : route.sections[index].depends_on)
        FUZZ_CHECK(dep < route.sections.size() && seen[dep]);
    }
    for (const gather::section_config& section : route.sections)
      FUZZ_CHECK(section.required || section.fallback || section.fallback_from);
  }
  return 0;
}
