// Fuzzes config parsing and validation: load_config() on arbitrary text.
// Invariants: exactly one of value / problems; every problem names a JSON path ("<path>: what");
// a valid config has routes, and each route's resolve order covers every section once; a route's
// shape is one more literal than holes, each hole naming a section, and renders to a JSON object.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/answer/aggregate_response.hpp"
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
    if (route.shape) {
      FUZZ_CHECK(route.shape->literals.size() == route.shape->holes.size() + 1);
      for (const gather::shape_hole& hole : route.shape->holes)
        FUZZ_CHECK(hole.section < route.sections.size());
      // Every section ok with data {"a": [1, "x"]}: the answer is the template rendered, an object
      // whose degraded and warnings are the answer's own.
      std::vector<gather::section_outcome> outcomes(route.sections.size());
      for (auto& outcome : outcomes) {
        outcome.status = gather::section_status::ok;
        outcome.data = R"({"a": [1, "x"]})";
      }
      const auto reply = gather::build_aggregate_reply(route, outcomes, "fuzz");
      const auto answer = nlohmann::json::parse(reply.body, nullptr, false);
      FUZZ_CHECK(answer.is_object());
      FUZZ_CHECK(answer.value("degraded", true) == false);
      FUZZ_CHECK(answer.value("warnings", nlohmann::json()) == nlohmann::json::array());
    }
  }
  return 0;
}
