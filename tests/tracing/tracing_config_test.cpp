// The `tracing` object: defaults, bounds and problems under their JSON paths (as `gather check`
// prints them).
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"
#include "support/child_process.hpp"

using nlohmann::json;

namespace {

json with_tracing(json tracing) {
  return {{"listen", "127.0.0.1:0"},
          {"tracing", std::move(tracing)},
          {"routes",
           {{{"path", "/p"},
             {"sections", {{{"name", "a"}, {"url", "http://127.0.0.1:1/a"}, {"timeout_ms", 100}, {"required", true}}}}}}}};
}

std::vector<std::string> tracing_problems(const json& cfg) {
  return gather::load_config(cfg.dump()).problems;
}

bool mentions_tracing_problem(const std::vector<std::string>& problems, const std::string& text) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(text) != std::string::npos; });
}

} // namespace

TEST_CASE("tracing config: absent means no tracing, present gets its defaults", "[unit][tracing][config]") {
  auto plain = with_tracing({});
  plain.erase("tracing");
  auto none = gather::load_config(plain.dump());
  REQUIRE(none.value);
  CHECK_FALSE(none.value->tracing);

  auto loaded = gather::load_config(with_tracing({{"otlp_endpoint", "http://127.0.0.1:4318/v1/traces"}}).dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->tracing);
  const auto& t = *loaded.value->tracing;
  CHECK(t.otlp_endpoint == "http://127.0.0.1:4318/v1/traces");
  CHECK(t.service_name == "gather");
  CHECK(t.sample_ratio == 1.0);
  CHECK(t.max_queue_spans == 2048);
  CHECK(t.max_batch_spans == 512);
  CHECK(t.export_interval == gather::millis{2000});
  CHECK(t.export_timeout == gather::millis{1000});

  auto custom = gather::load_config(
    with_tracing({{"otlp_endpoint", "https://collector.example:4318/v1/traces"},
                  {"service_name", "shop-edge"}, {"sample_ratio", 0.25}, {"max_queue_spans", 10},
                  {"max_batch_spans", 5}, {"export_interval_ms", 100}, {"export_timeout_ms", 300}})
      .dump());
  REQUIRE(custom.value);
  CHECK(custom.value->tracing->service_name == "shop-edge");
  CHECK(custom.value->tracing->sample_ratio == 0.25);
  CHECK(custom.value->tracing->max_queue_spans == 10);
  CHECK(custom.value->tracing->export_interval == gather::millis{100});
}

TEST_CASE("tracing config: every problem is named by its JSON path", "[unit][tracing][config]") {
  CHECK(mentions_tracing_problem(tracing_problems(with_tracing(json::object())), "tracing.otlp_endpoint: "));
  CHECK(mentions_tracing_problem(tracing_problems(with_tracing("http://x")), "tracing: "));
  const auto p = tracing_problems(with_tracing({{"otlp_endpoint", "ftp://collector/v1/traces"},
                                           {"service_name", ""},
                                           {"sample_ratio", 1.5},
                                           {"max_queue_spans", 0},
                                           {"max_batch_spans", "many"},
                                           {"export_interval_ms", 5000},
                                           {"export_timeout_ms", 0},
                                           {"bogus", true}}));
  CHECK(mentions_tracing_problem(p, "tracing.otlp_endpoint: must start with http:// or https://"));
  CHECK(mentions_tracing_problem(p, "tracing.service_name: must be a non-empty string"));
  CHECK(mentions_tracing_problem(p, "tracing.sample_ratio: must be a number from 0 to 1"));
  CHECK(mentions_tracing_problem(p, "tracing.max_queue_spans: "));
  CHECK(mentions_tracing_problem(p, "tracing.max_batch_spans: "));
  CHECK(mentions_tracing_problem(p, "tracing.export_interval_ms: "));
  CHECK(mentions_tracing_problem(p, "tracing.export_timeout_ms: "));
  CHECK(mentions_tracing_problem(p, "tracing.bogus"));
  CHECK(mentions_tracing_problem(tracing_problems(with_tracing({{"otlp_endpoint", "http://127.0.0.1:99999/v1/traces"}})),
            "tracing.otlp_endpoint: the port must be a number from 1 to 65535"));
  CHECK(mentions_tracing_problem(tracing_problems(with_tracing({{"otlp_endpoint", 4318}})), "tracing.otlp_endpoint: "));
}

TEST_CASE("tracing config: gather check prints the tracing problems and exits 2", "[system][tracing][config][cli]") {
  using namespace gather::test;
  auto r = run(GATHER_BINARY, {"check", "--config",
                               temp_file(with_tracing({{"otlp_endpoint", "collector:4318"},
                                                       {"sample_ratio", -1}}).dump())});
  CHECK(r.code == 2);
  CHECK(r.err.find("tracing.otlp_endpoint") != std::string::npos);
  CHECK(r.err.find("tracing.sample_ratio") != std::string::npos);
  auto ok = run(GATHER_BINARY, {"check", "--config",
                                temp_file(with_tracing({{"otlp_endpoint", "http://127.0.0.1:4318/v1/traces"}}).dump())});
  CHECK(ok.code == 0);
}
