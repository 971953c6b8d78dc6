// Reading the resilience keys (docs/resilience.md): a section's hedge, max_concurrent and circuit, and the
// top-level retry_budget and deadline_header.

#include "config_reader.hpp"

#include <cmath>

namespace gather::config_reader {

namespace {

/// The member as a number with `fits`, else reported with `expected` (any JSON number: 99.9 too).
std::optional<double> read_real(const object_reader& object, std::string_view key,
                                bool (*fits)(double), const std::string& expected) {
  const json* value = object.find(key);
  if (!value)
    return std::nullopt;
  if (value->is_number() && fits(value->get<double>()))
    return value->get<double>();
  object.problem(key, "must be " + expected);
  return std::nullopt;
}

std::optional<hedge_policy> read_hedge(const object_reader& section) {
  const auto object = section.read_object("hedge");
  if (!object)
    return std::nullopt;
  object->reject_unknown_keys({"after_ms", "percentile", "min_ms", "max"});
  hedge_policy out;
  const bool fixed = object->find("after_ms") != nullptr;
  const bool measured = object->find("percentile") != nullptr;
  if (fixed == measured) {
    section.problem("hedge", "must have exactly one of \"after_ms\" (a fixed delay) and "
                             "\"percentile\" (the section's measured latency)");
  } else if (fixed) {
    millis after{0};
    object->read_millis("after_ms", 1, max_timeout_ms, after);
    out.after = after;
    if (object->find("min_ms"))
      object->problem("min_ms", "only goes with \"percentile\"");
  } else {
    out.percentile = read_real(*object, "percentile",
                               [](double p) { return p >= 50 && p <= 99.9; },
                               "a number from 50 to 99.9");
    object->read_millis("min_ms", 1, max_timeout_ms, out.min_delay);
  }
  object->read_integer("max", 1, 3, out.max);
  return out;
}

std::optional<circuit_policy> read_circuit(const object_reader& section) {
  const auto object = section.read_object("circuit");
  if (!object)
    return std::nullopt;
  object->reject_unknown_keys({"failure_ratio", "min_calls", "window_ms", "open_ms"});
  circuit_policy out;
  const std::string ratio = "a number greater than 0 and at most 1";
  if (object->require("failure_ratio", ratio)) {
    if (auto r = read_real(*object, "failure_ratio", [](double v) { return v > 0 && v <= 1; }, ratio))
      out.failure_ratio = *r;
  }
  object->read_integer("min_calls", 1, 1000000, out.min_calls);
  object->read_millis("window_ms", 100, 3600000, out.window);
  object->read_millis("open_ms", 1, 3600000, out.open);
  return out;
}

} // namespace

void read_resilience(const object_reader& section, section_config& out) {
  out.hedge = read_hedge(section);
  section.read_integer("max_concurrent", 1, 1000000, out.max_concurrent);
  out.circuit = read_circuit(section);
}

void read_retry_budget(const object_reader& top, retry_budget_policy& out) {
  const auto object = top.read_object("retry_budget");
  if (!object)
    return;
  object->reject_unknown_keys({"ratio", "min_per_s"});
  object->read_number("ratio", 0, 10, out.ratio);
  object->read_number("min_per_s", 0, 100000, out.min_per_s);
}

void read_deadline_header(const object_reader& top, std::string& out) {
  const std::string expected = "a header name (letters, digits and !#$%&'*+-.^_`|~), or \"\" for none";
  const auto name = top.read_string("deadline_header", "a string: " + expected);
  if (!name)
    return;
  if (!name->empty() && !is_token(*name))
    top.problem("deadline_header", "must be " + expected);
  else
    out = *name; // as written: sent in this spelling, matched on inbound requests in any case
}

} // namespace gather::config_reader
