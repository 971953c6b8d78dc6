// `upstreams` in the config reader (docs/upstreams.md): every key and range, and every mistake
// named by its JSON path. Nothing is looked up: names stay names.
#include <catch2/catch.hpp>

#include <string>

#include "gather/config/config.hpp"

using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

json upstream_doc(json upstreams, std::string url = "http://prices/p/{id}") {
  return json{{"upstreams", std::move(upstreams)},
              {"routes",
               {{{"path", "/p/{id}"},
                 {"sections", {{{"name", "s"}, {"url", url}, {"timeout_ms", 100}, {"required", true}}}}}}}};
}

std::vector<std::string> upstream_problems(const json& cfg) { return gather::load_config(cfg.dump()).problems; }

std::string only_problem(const json& cfg) {
  const auto problems = upstream_problems(cfg);
  REQUIRE(problems.size() == 1);
  return problems[0];
}

} // namespace

TEST_CASE("config: upstreams are read with their defaults", "[unit][config][upstreams]") {
  const auto loaded = gather::load_config(upstream_doc(json::parse(R"({
    "prices": {"endpoints": ["10.0.0.7:9002", {"address": "10.0.0.9:9002", "weight": 2}, "prices.internal:9002"]},
    "library": {"dns": "library.books.svc:50051", "refresh_ms": 2000, "balance": "round_robin",
                "health": {"grpc_service": "", "interval_ms": 100}, "idle_timeout_ms": 0,
                "max_connection_age_ms": 30000,
                "outlier": {"consecutive_failures": 3, "eject_ms": 100, "max_ejected_percent": 0}},
    "books": {"srv": "_grpc._tcp.books.svc", "health": {"path": "/healthz", "timeout_ms": 50, "unhealthy": 1, "healthy": 4}}
  })")).dump());
  REQUIRE(loaded.value);
  const auto& ups = loaded.value->upstreams;
  REQUIRE(ups.size() == 3);
  CHECK(ups[0].name == "books"); // sorted by name
  CHECK(ups[0].source == gather::upstream_config::source_kind::srv);
  CHECK(ups[0].srv_name == "_grpc._tcp.books.svc");
  REQUIRE(ups[0].health);
  CHECK(ups[0].health->path == "/healthz");
  CHECK_FALSE(ups[0].health->grpc_service);
  CHECK(ups[0].health->timeout == gather::millis{50});
  CHECK(ups[0].health->unhealthy == 1);
  CHECK(ups[0].health->healthy == 4);
  CHECK(ups[0].health->interval == gather::millis{5000});
  CHECK(ups[1].name == "library");
  CHECK(ups[1].dns_name == "library.books.svc");
  CHECK(ups[1].dns_port == 50051);
  CHECK(ups[1].refresh == gather::millis{2000});
  CHECK(ups[1].balance == gather::balance_kind::round_robin);
  CHECK(ups[1].health->grpc_service == std::string{});
  CHECK(ups[1].idle_timeout == gather::millis{0});
  CHECK(ups[1].max_connection_age == gather::millis{30000});
  CHECK(ups[1].outlier.consecutive_failures == 3);
  CHECK(ups[1].outlier.eject == gather::millis{100});
  CHECK(ups[1].outlier.max_ejected_percent == 0);
  const auto& prices = ups[2];
  CHECK(prices.balance == gather::balance_kind::least_request);
  CHECK(prices.refresh == gather::millis{5000});
  CHECK(prices.outlier.consecutive_failures == 5);
  CHECK(prices.outlier.eject == gather::millis{30000});
  CHECK(prices.outlier.max_ejected_percent == 50);
  CHECK(prices.idle_timeout == gather::millis{60000});
  CHECK(prices.max_connection_age == gather::millis{0});
  REQUIRE(prices.endpoints.size() == 3);
  CHECK(prices.endpoints[1].host == "10.0.0.9");
  CHECK(prices.endpoints[1].weight == 2);
  CHECK(prices.endpoints[0].weight == 1);
  CHECK_FALSE(prices.literal_only());
  CHECK(loaded.value->upstream_of("http://prices/p/1") == &prices);
  CHECK(loaded.value->upstream_of("https://PRICES?x") == &prices);
  CHECK(loaded.value->upstream_of("http://prices.example/p") == nullptr);
  CHECK(loaded.value->upstream_of("http://127.0.0.1:8080/p") == nullptr);
}

TEST_CASE("config: a URL or gRPC target that names an upstream carries no port", "[unit][config][upstreams]") {
  const json ups = {{"prices", {{"endpoints", {"10.0.0.7:9002"}}}}};
  CHECK_THAT(only_problem(upstream_doc(ups, "http://prices:9002/p/{id}")),
             Contains("routes[0].sections[0].url: names the upstream \"prices\": no port here"));
  CHECK(upstream_problems(upstream_doc(ups, "http://other:9002/p/{id}")).empty());
  auto grpc = upstream_doc(ups);
  grpc["routes"][0]["sections"][0].erase("url");
  grpc["routes"][0]["sections"][0]["grpc"] = {{"target", "http://prices:50051"}, {"method", "a.B/C"},
                                              {"message", json::object()}};
  grpc["protos"] = {{"reflection", true}};
  const auto problems = upstream_problems(grpc);
  REQUIRE_FALSE(problems.empty());
  CHECK_THAT(problems.back(), Contains("routes[0].sections[0].grpc.target: names the upstream \"prices\""));
}

TEST_CASE("config: upstream mistakes are named by their JSON path", "[unit][config][upstreams]") {
  const auto one = [](json body) { return only_problem(upstream_doc({{"prices", std::move(body)}})); };
  CHECK_THAT(only_problem(upstream_doc({{"Prices", {{"endpoints", {"10.0.0.1:1"}}}}})),
             Contains("upstreams.Prices: an upstream's name must match [a-z][a-z0-9-]*"));
  CHECK_THAT(only_problem(upstream_doc({{std::string(64, 'a'), {{"endpoints", {"10.0.0.1:1"}}}}})),
             Contains("(at most 63 characters)"));
  CHECK_THAT(only_problem(upstream_doc(json::array())), Contains("upstreams: must be an object"));
  CHECK_THAT(one(json::object()), Contains("upstreams.prices: must have exactly one of \"endpoints\", \"dns\" and \"srv\""));
  CHECK_THAT(one({{"endpoints", {"10.0.0.1:1"}}, {"dns", "a:1"}}), Contains("upstreams.prices: must have exactly one of"));
  CHECK_THAT(one({{"endpoints", json::array()}}), Contains("upstreams.prices.endpoints: must be an array of 1 to 1000"));
  CHECK_THAT(one({{"endpoints", json::array({"10.0.0.1"})}}), Contains("upstreams.prices.endpoints[0]: must be \"host:port\""));
  CHECK_THAT(one({{"endpoints", json::array({"10.0.0.1:0"})}}), Contains("upstreams.prices.endpoints[0]: must be"));
  CHECK_THAT(one({{"endpoints", {{{"address", "10.0.0.1:1"}, {"weight", 101}}}}}),
             Contains("upstreams.prices.endpoints[0].weight: must be an integer from 1 to 100"));
  CHECK_THAT(one({{"endpoints", {{{"weight", 1}}}}}), Contains("upstreams.prices.endpoints[0].address"));
  CHECK_THAT(one({{"endpoints", {{{"address", "10.0.0.1:1"}, {"w", 1}}}}}),
             Contains("upstreams.prices.endpoints[0].w: unknown key"));
  json many = json::array();
  for (int i = 0; i < 1001; ++i)
    many.push_back("10.0.0.1:" + std::to_string(i + 1));
  CHECK_THAT(one({{"endpoints", many}}), Contains("upstreams.prices.endpoints: must be an array of 1 to 1000"));
  CHECK_THAT(one({{"dns", "library"}}), Contains("upstreams.prices.dns: must be \"host:port\""));
  CHECK_THAT(one({{"srv", ""}}), Contains("upstreams.prices.srv: must be a DNS SRV name"));
  CHECK_THAT(one({{"dns", "a:1"}, {"refresh_ms", 999}}), Contains("upstreams.prices.refresh_ms: must be an integer from 1000 to 3600000"));
  CHECK_THAT(one({{"dns", "a:1"}, {"balance", "random"}}), Contains("upstreams.prices.balance: must be \"least_request\" or \"round_robin\""));
  CHECK_THAT(one({{"dns", "a:1"}, {"outlier", {{"consecutive_failures", 0}}}}),
             Contains("upstreams.prices.outlier.consecutive_failures: must be an integer from 1 to 1000"));
  CHECK_THAT(one({{"dns", "a:1"}, {"outlier", {{"eject_ms", 0}}}}), Contains("upstreams.prices.outlier.eject_ms"));
  CHECK_THAT(one({{"dns", "a:1"}, {"outlier", {{"max_ejected_percent", 101}}}}),
             Contains("upstreams.prices.outlier.max_ejected_percent: must be an integer from 0 to 100"));
  CHECK_THAT(one({{"dns", "a:1"}, {"health", {{"path", "/h"}, {"grpc_service", ""}}}}),
             Contains("upstreams.prices.health: must have exactly one of \"path\" and \"grpc_service\""));
  CHECK_THAT(one({{"dns", "a:1"}, {"health", json::object()}}), Contains("upstreams.prices.health: must have exactly one"));
  CHECK_THAT(one({{"dns", "a:1"}, {"health", {{"path", "h"}}}}), Contains("upstreams.prices.health.path: must be a path beginning with /"));
  CHECK_THAT(one({{"dns", "a:1"}, {"health", {{"path", "/h"}, {"interval_ms", 99}}}}),
             Contains("upstreams.prices.health.interval_ms: must be an integer from 100 to 3600000"));
  CHECK_THAT(one({{"dns", "a:1"}, {"health", {{"path", "/h"}, {"unhealthy", 0}}}}), Contains("upstreams.prices.health.unhealthy"));
  CHECK_THAT(one({{"dns", "a:1"}, {"idle_timeout_ms", -1}}), Contains("upstreams.prices.idle_timeout_ms"));
  CHECK_THAT(one({{"dns", "a:1"}, {"max_connection_age_ms", -1}}), Contains("upstreams.prices.max_connection_age_ms"));
  CHECK_THAT(one({{"dns", "a:1"}, {"weight", 1}}), Contains("upstreams.prices.weight: unknown key"));
}

TEST_CASE("config: an upstream's tls is checked by JSON path, its files read", "[unit][config][upstreams]") {
  const auto one = [](json body) { return only_problem(upstream_doc({{"prices", std::move(body)}})); };
  CHECK_THAT(one({{"dns", "a:1"}, {"tls", {{"cert_file", "/etc/hostname"}}}}),
             Contains("upstreams.prices.tls.cert_file: needs key_file"));
  CHECK_THAT(one({{"dns", "a:1"}, {"tls", {{"key_file", "/etc/hostname"}}}}),
             Contains("upstreams.prices.tls.key_file: needs cert_file"));
  CHECK_THAT(one({{"dns", "a:1"}, {"tls", {{"ca_file", "/nonexistent/ca.pem"}}}}),
             Contains("upstreams.prices.tls.ca_file: cannot read \"/nonexistent/ca.pem\""));
  CHECK_THAT(one({{"endpoints", {"10.0.0.1:1"}}, {"tls", json::object()}}),
             Contains("upstreams.prices.tls.server_name: is required when an endpoint is an IP literal"));
  CHECK(upstream_problems(upstream_doc({{"prices", {{"endpoints", {"10.0.0.1:1"}}, {"tls", {{"server_name", "p.internal"}}}}}})).empty());
  CHECK(upstream_problems(upstream_doc({{"prices", {{"dns", "p.internal:1"}, {"tls", json::object()}}}})).empty());
  const auto loaded = gather::load_config(
      upstream_doc({{"prices", {{"endpoints", {"10.0.0.1:1"}},
                                {"tls", {{"server_name", "p.internal"}, {"ca_file", "/etc/hostname"}}}}}})
          .dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->upstreams[0].tls);
  CHECK(loaded.value->upstreams[0].tls->server_name == "p.internal");
  CHECK(loaded.value->upstreams[0].tls->ca_file == "/etc/hostname");
  CHECK(loaded.value->upstreams[0].literal_only());
}
