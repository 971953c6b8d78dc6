// The resilience keys (docs/resilience.md) as `gather check` reads them: defaults, values, and one
// problem per mistake under its JSON path.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gather/config/config.hpp"

using gather::load_config;
using gather::millis;
using json = nlohmann::json;

namespace {

json with_section(json extra, json top = json::object()) {
  json section = {{"name", "s"}, {"url", "http://127.0.0.1:9001/x"}, {"timeout_ms", 300},
                  {"fallback", nullptr}};
  section.erase("fallback");
  section["required"] = true;
  for (auto& [k, v] : extra.items())
    section[k] = v;
  json cfg = {{"routes", {{{"path", "/p"}, {"sections", {section}}}}}};
  for (auto& [k, v] : top.items())
    cfg[k] = v;
  return cfg;
}

std::vector<std::string> resilience_problems(const json& cfg) {
  return load_config(cfg.dump()).problems;
}

bool has_resilience_problem(const std::vector<std::string>& all, const std::string& text) {
  return std::any_of(all.begin(), all.end(), [&](const std::string& p) { return p == text; });
}

} // namespace

TEST_CASE("resilience keys take their defaults when left out", "[unit][config][resilience]") {
  auto loaded = load_config(with_section(json::object()).dump());
  REQUIRE(loaded.value);
  const auto& cfg = *loaded.value;
  const auto& s = cfg.routes[0].sections[0];
  CHECK(!s.hedge);
  CHECK(s.max_concurrent == 0);
  CHECK(!s.circuit);
  CHECK(cfg.retry_budget.ratio == Approx(0.2));
  CHECK(cfg.retry_budget.min_per_s == Approx(10));
  CHECK(cfg.deadline_header == "X-Timeout-Ms");
}

TEST_CASE("resilience keys are read", "[unit][config][resilience]") {
  auto loaded = load_config(
    with_section({{"hedge", {{"percentile", 99.9}, {"max", 3}}},
                  {"max_concurrent", 8},
                  {"circuit", {{"failure_ratio", 0.5}, {"open_ms", 100}}}},
                 {{"retry_budget", {{"ratio", 0}, {"min_per_s", 0}}}, {"deadline_header", ""}})
      .dump());
  REQUIRE(loaded.value);
  const auto& s = loaded.value->routes[0].sections[0];
  REQUIRE(s.hedge);
  CHECK(!s.hedge->after);
  CHECK(*s.hedge->percentile == Approx(99.9));
  CHECK(s.hedge->min_delay == millis{1});
  CHECK(s.hedge->max == 3);
  CHECK(s.max_concurrent == 8);
  REQUIRE(s.circuit);
  CHECK(s.circuit->failure_ratio == Approx(0.5));
  CHECK(s.circuit->min_calls == 20);
  CHECK(s.circuit->window == millis{10000});
  CHECK(s.circuit->open == millis{100});
  CHECK(loaded.value->retry_budget.ratio == 0);
  CHECK(loaded.value->deadline_header.empty());

  auto fixed = load_config(with_section({{"hedge", {{"after_ms", 40}}}}).dump());
  REQUIRE(fixed.value);
  CHECK(*fixed.value->routes[0].sections[0].hedge->after == millis{40});
}

TEST_CASE("every resilience mistake is one problem under its path", "[unit][config][resilience]") {
  const std::string s = "routes[0].sections[0]";
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"after_ms", 10}, {"percentile", 90}}}})),
            s + ".hedge: must have exactly one of \"after_ms\" (a fixed delay) and \"percentile\" "
                "(the section's measured latency)"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", json::object()}})),
            s + ".hedge: must have exactly one of \"after_ms\" (a fixed delay) and \"percentile\" "
                "(the section's measured latency)"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"percentile", 49}}}})),
            s + ".hedge.percentile: must be a number from 50 to 99.9"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"percentile", 99.95}}}})),
            s + ".hedge.percentile: must be a number from 50 to 99.9"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"after_ms", 0}}}})),
            s + ".hedge.after_ms: must be an integer from 1 to 600000"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"after_ms", 5}, {"max", 4}}}})),
            s + ".hedge.max: must be an integer from 1 to 3"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"after_ms", 5}, {"min_ms", 4}}}})),
            s + ".hedge.min_ms: only goes with \"percentile\""));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", {{"after_ms", 5}, {"delay", 4}}}})),
            s + ".hedge.delay: unknown key"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"hedge", 5}})), s + ".hedge: must be an object"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"max_concurrent", 0}})),
            s + ".max_concurrent: must be an integer from 1 to 1000000"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"circuit", {{"min_calls", 5}}}})),
            s + ".circuit.failure_ratio: is required (a number greater than 0 and at most 1)"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"circuit", {{"failure_ratio", 0}}}})),
            s + ".circuit.failure_ratio: must be a number greater than 0 and at most 1"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"circuit", {{"failure_ratio", 1.5}}}})),
            s + ".circuit.failure_ratio: must be a number greater than 0 and at most 1"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"circuit", {{"failure_ratio", 0.5}, {"window_ms", 10}}}})),
            s + ".circuit.window_ms: must be an integer from 100 to 3600000"));
  CHECK(has_resilience_problem(resilience_problems(with_section({{"circuit", {{"failure_ratio", 0.5}, {"open_ms", 0}}}})),
            s + ".circuit.open_ms: must be an integer from 1 to 3600000"));
  CHECK(has_resilience_problem(resilience_problems(with_section({}, {{"retry_budget", {{"ratio", -1}}}})),
            "retry_budget.ratio: must be a number from 0 to 10"));
  CHECK(has_resilience_problem(resilience_problems(with_section({}, {{"retry_budget", {{"per_s", 1}}}})),
            "retry_budget.per_s: unknown key"));
  CHECK(has_resilience_problem(resilience_problems(with_section({}, {{"deadline_header", "X Timeout"}})),
            "deadline_header: must be a header name (letters, digits and !#$%&'*+-.^_`|~), or \"\" for none"));
  CHECK(has_resilience_problem(resilience_problems(with_section({}, {{"deadline_header", 5}})),
            "deadline_header: must be a string: a header name (letters, digits and !#$%&'*+-.^_`|~), or \"\" for none"));
}
