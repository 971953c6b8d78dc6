// What the config tests (tests/config/config_*_test.cpp) share: small valid documents to change
// one key of, and loading a document expecting a problem under a JSON path or a valid config.
#pragma once

#include <string>
#include <utility>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

namespace gather::test::config_support {

inline nlohmann::json config_section(const std::string& name, const std::string& url) {
  return {{"name", name}, {"url", url}, {"timeout_ms", 100}, {"required", true}};
}

inline nlohmann::json aggregate_route(const std::string& path, nlohmann::json sections) {
  return {{"path", path}, {"sections", std::move(sections)}};
}

/// A valid config with one aggregate route "/items/{id}" holding `sections`.
inline nlohmann::json with_sections(nlohmann::json sections) {
  return {{"routes", nlohmann::json::array({aggregate_route("/items/{id}", std::move(sections))})}};
}

/// A valid config: one route, one required section "a".
inline nlohmann::json minimal() {
  return with_sections(nlohmann::json::array({config_section("a", "http://h/a/{id}")}));
}

inline nlohmann::json batch_route(nlohmann::json batch) {
  return {{"path", "/batch"}, {"batch", std::move(batch)}};
}

inline nlohmann::json minimal_batch() { return {{"url", "http://h/o/{item}"}, {"timeout_ms", 100}}; }

inline nlohmann::json with_batch(nlohmann::json batch) {
  return {{"routes", nlohmann::json::array({batch_route(std::move(batch))})}};
}

/// The minimal config with one top-level key set.
inline nlohmann::json with_top(const std::string& key, nlohmann::json value) {
  nlohmann::json document = minimal();
  document[key] = std::move(value);
  return document;
}

inline config_result load(const nlohmann::json& document) { return load_config(document.dump()); }

/// Whether some problem starts with `prefix` (a JSON path and ": ", possibly more).
inline bool has_problem(const config_result& result, const std::string& prefix) {
  for (const std::string& problem : result.problems) {
    if (problem.rfind(prefix, 0) == 0)
      return true;
  }
  return false;
}

/// Loads `document`, expects it to be refused with a problem starting with `prefix`.
inline void require_problem(const nlohmann::json& document, const std::string& prefix) {
  const config_result result = load(document);
  INFO("config: " << document.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  CHECK_FALSE(result.value.has_value());
  CHECK(has_problem(result, prefix));
}

inline gather::config require_valid(const nlohmann::json& document) {
  const config_result result = load(document);
  INFO("config: " << document.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  REQUIRE(result.value.has_value());
  REQUIRE(result.problems.empty());
  return *result.value;
}

} // namespace gather::test::config_support
