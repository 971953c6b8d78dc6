// The document as a whole: the contract's example, defaults, problems, JSON, files, key types.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "gather/config/config.hpp"
#include "config/config_test_support.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;
using namespace gather::test::config_support;

namespace {

/// docs/config.md's example, verbatim.
const char* const contract_example = R"({
  "listen": "127.0.0.1:8080",
  "max_inflight": 1024,
  "max_body_bytes": 1048576,
  "routes": [
    {
      "path": "/products/{id}",
      "deadline_ms": 800,
      "sections": [
        {"name": "base",   "url": "http://127.0.0.1:9001/items/{id}", "timeout_ms": 300, "required": true},
        {"name": "price",  "url": "http://127.0.0.1:9002/price/{id}", "timeout_ms": 300,
         "fallback": {"amount": null, "currency": "CNY"}, "retry": {"attempts": 2, "backoff_ms": 20}},
        {"name": "stock",  "url": "http://127.0.0.1:9003/stock/{id}", "timeout_ms": 300,
         "fallback_from": "base.stock"},
        {"name": "reviews","url": "http://127.0.0.1:9004/reviews/{id}?tenant={header.x-tenant}",
         "timeout_ms": 120, "fallback": {"score": 0, "count": 0},
         "cache_ttl_ms": 30000, "fields": ["score", "count"], "forward_headers": ["x-tenant"]},
        {"name": "promo",  "url": "http://127.0.0.1:9005/promo/{id}", "timeout_ms": 200,
         "fallback": {"id": null, "label": ""}},
        {"name": "coupon", "url": "http://127.0.0.1:9005/coupons/{promo.id}", "timeout_ms": 200,
         "fallback": []}
      ]
    },
    {
      "path": "/orders/status",
      "batch": {"url": "http://127.0.0.1:9006/orders/{item}", "max_items": 500, "concurrency": 64,
                "timeout_ms": 2000, "retry": {"attempts": 2, "backoff_ms": 200}, "deadline_ms": 8000}
    }
  ]
})";

} // namespace

TEST_CASE("the contract's example configuration loads", "[unit][config]") {
  const config_result result = load_config(contract_example);
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  REQUIRE(result.value.has_value());
  const gather::config& cfg = *result.value;
  CHECK(cfg.listen == "127.0.0.1:8080");
  CHECK(cfg.max_inflight == 1024);
  CHECK(cfg.max_response_bytes == 8388608);
  REQUIRE(cfg.routes.size() == 2);

  const gather::route_config& products = cfg.routes[0];
  CHECK(products.deadline == millis(800));
  REQUIRE(products.segments.size() == 2);
  CHECK_FALSE(products.segments[0].capture);
  CHECK(products.segments[0].text == "products");
  CHECK(products.segments[1].capture);
  CHECK(products.segments[1].text == "id");
  REQUIRE(products.sections.size() == 6);
  CHECK(products.sections[0].required);
  CHECK(products.sections[1].retry.attempts == 2);
  CHECK(products.sections[1].retry.backoff == millis(20));
  CHECK(products.sections[1].retry.multiplier == 2.0);
  CHECK(*products.sections[1].fallback == json{{"amount", nullptr}, {"currency", "CNY"}});
  REQUIRE(products.sections[2].fallback_from.has_value());
  CHECK(products.sections[2].fallback_from->section == 0);
  CHECK(products.sections[2].fallback_from->field == gather::field_path{"stock"});
  CHECK(products.sections[2].depends_on.empty());
  CHECK(products.sections[3].cache_ttl == millis(30000));
  CHECK(products.sections[3].fields == std::vector<gather::field_path>{{"score"}, {"count"}});
  CHECK(products.sections[3].forward_headers == std::vector<std::string>{"x-tenant"});
  CHECK(products.sections[5].depends_on == std::vector<std::size_t>{4});
  CHECK(*products.sections[5].fallback == json::array());
  CHECK(products.resolve_order == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  CHECK_FALSE(products.batch.has_value());

  const gather::route_config& orders = cfg.routes[1];
  REQUIRE(orders.batch.has_value());
  CHECK(orders.sections.empty());
  CHECK(orders.batch->max_items == 500);
  CHECK(orders.batch->concurrency == 64);
  CHECK(orders.batch->timeout == millis(2000));
  CHECK(orders.batch->deadline == millis(8000));
  CHECK(orders.batch->retry.attempts == 2);
  CHECK(orders.batch->retry.backoff == millis(200));
}

TEST_CASE("omitted keys take their documented defaults", "[unit][config]") {
  json document = minimal();
  document["routes"][0]["sections"][0].erase("required");
  document["routes"][0]["sections"][0]["fallback"] = 0;
  document["routes"].push_back(batch_route(minimal_batch()));
  const gather::config cfg = require_valid(document);
  CHECK(cfg.listen == "127.0.0.1:8080");
  CHECK(cfg.max_inflight == 1024);
  CHECK(cfg.max_body_bytes == 1048576);
  CHECK(cfg.max_response_bytes == 8388608);
  CHECK_FALSE(cfg.cluster.has_value());
  const gather::route_config& route = cfg.routes[0];
  CHECK(route.deadline == millis(1000));
  const gather::section_config& s = route.sections[0];
  CHECK_FALSE(s.required);
  CHECK(s.timeout == millis(100));
  CHECK(s.retry.attempts == 1);
  CHECK(s.retry.backoff == millis(0));
  CHECK(s.retry.multiplier == 2.0);
  CHECK(s.cache_ttl == millis(0));
  CHECK(s.fields.empty());
  CHECK(s.forward_headers.empty());
  CHECK_FALSE(s.fallback_from.has_value());
  const gather::batch_config& batch = *cfg.routes[1].batch;
  CHECK(batch.max_items == 1000);
  CHECK(batch.concurrency == 16);
  CHECK(batch.deadline == millis(10000));
  CHECK(batch.retry.attempts == 1);
  CHECK(batch.url.parts.back().what == url_part::kind::item);
}

TEST_CASE("every problem is reported, not only the first", "[unit][config]") {
  json document = minimal();
  document["max_inflight"] = 0;
  document["listen"] = "nowhere";
  document["routes"][0]["sections"][0]["timeout_ms"] = -5;
  document["routes"][0]["sections"].push_back(config_section("b", "ftp://h/b"));
  document["routes"][0]["sections"][1]["required"] = false;
  document["routes"][0]["bogus"] = 1;
  const config_result result = load(document);
  CHECK_FALSE(result.value.has_value());
  CHECK(result.problems.size() == 6);
  CHECK(has_problem(result, "max_inflight: must be an integer from 1 to 1000000"));
  CHECK(has_problem(result, "listen: "));
  CHECK(
      has_problem(result, "routes[0].sections[0].timeout_ms: must be an integer from 1 to 600000"));
  CHECK(has_problem(result, "routes[0].sections[1].url: must start with http:// or https://"));
  CHECK(has_problem(
      result, "routes[0].sections[1]: optional section needs \"fallback\" or \"fallback_from\""));
  CHECK(has_problem(result, "routes[0].bogus: unknown key"));
}

TEST_CASE("text that is not JSON gives one problem naming the position", "[unit][config]") {
  const config_result result = load_config("{\n  \"routes\": [1, 2\n");
  CHECK_FALSE(result.value.has_value());
  REQUIRE(result.problems.size() == 1);
  CHECK(result.problems[0].rfind("$: invalid JSON (byte ", 0) == 0);
  CHECK(result.problems[0].find("line 3") != std::string::npos);
}

TEST_CASE("the document must be an object with a non-empty routes array", "[unit][config]") {
  require_problem(json::array(), "$: must be a JSON object");
  require_problem(json::object(), "routes: is required");
  require_problem({{"routes", json::array()}}, "routes: must be a non-empty array");
  require_problem({{"routes", json::object()}}, "routes: must be a non-empty array");
  require_problem({{"routes", json::array({1})}}, "routes[0]: must be an object");
}

TEST_CASE("a key given twice in one object is an error", "[unit][config]") {
  const config_result result = load_config(R"({"routes": [{"path": "/a", "path": "/b",
      "sections": [{"name": "a", "url": "http://h/", "timeout_ms": 1, "required": true}]}]})");
  CHECK_FALSE(result.value.has_value());
  CHECK(has_problem(result, "routes[0].path: duplicate key"));
}

TEST_CASE("config files are read from disk", "[unit][config]") {
  SECTION("a readable file") {
    const std::string file_path = (std::filesystem::temp_directory_path() /
                                   ("gather_config_test_" + std::to_string(::getpid()) + ".json"))
                                      .string();
    std::ofstream(file_path) << contract_example;
    const config_result result = gather::load_config_file(file_path);
    std::remove(file_path.c_str());
    CHECK(result.value.has_value());
  }
  SECTION("a missing file gives one problem naming it") {
    const config_result result = gather::load_config_file("/nonexistent/gather.json");
    CHECK_FALSE(result.value.has_value());
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0].rfind("/nonexistent/gather.json: cannot read the file", 0) == 0);
  }
  SECTION("a directory cannot be read") {
    const config_result result = gather::load_config_file("/");
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0].rfind("/: cannot read the file", 0) == 0);
  }
}

TEST_CASE("unknown keys are errors at every level", "[unit][config]") {
  json top = minimal();
  top["extra"] = 1;
  require_problem(top, "extra: unknown key");

  json route = minimal();
  route["routes"][0]["foo"] = 1;
  require_problem(route, "routes[0].foo: unknown key");

  json sect = minimal();
  sect["routes"][0]["sections"][0]["timeout"] = 1;
  require_problem(sect, "routes[0].sections[0].timeout: unknown key");

  json retry = minimal();
  retry["routes"][0]["sections"][0]["retry"] = {{"attempts", 2}, {"delay_ms", 5}};
  require_problem(retry, "routes[0].sections[0].retry.delay_ms: unknown key");

  json batch = minimal_batch();
  batch["items"] = 3;
  require_problem(with_batch(batch), "routes[0].batch.items: unknown key");

  json cluster = minimal();
  cluster["cluster"] = {{"nodes", json::array()}, {"peers", 1}};
  require_problem(cluster, "cluster.peers: unknown key");
}

TEST_CASE("integers must be JSON integers within their range", "[unit][config]") {
  const auto with_timeout = [](json value) {
    json document = minimal();
    document["routes"][0]["sections"][0]["timeout_ms"] = std::move(value);
    return document;
  };
  const std::string message =
      "routes[0].sections[0].timeout_ms: must be an integer from 1 to 600000";
  require_problem(with_timeout(300.0), message);
  require_problem(with_timeout("300"), message);
  require_problem(with_timeout(true), message);
  require_problem(with_timeout(0), message);
  require_problem(with_timeout(-1), message);
  require_problem(with_timeout(600001), message);
  require_problem(with_timeout(18446744073709551615ULL), message);
  require_valid(with_timeout(600000));

  json missing = minimal();
  missing["routes"][0]["sections"][0].erase("timeout_ms");
  require_problem(missing,
                  "routes[0].sections[0].timeout_ms: is required (an integer from 1 to 600000)");
}

TEST_CASE("booleans must be booleans", "[unit][config]") {
  json required = minimal();
  required["routes"][0]["sections"][0]["required"] = "yes";
  const config_result result = load(required);
  CHECK(has_problem(result, "routes[0].sections[0].required: must be true or false"));
  CHECK(result.problems.size() == 1); // and it is not also reported as an optional section

  json local = minimal();
  local["cluster"] = {{"local", 1}};
  require_problem(local, "cluster.local: must be true or false");
}

TEST_CASE("docs/config.md's example is the configuration the tests load", "[unit][config]") {
  std::ifstream in{std::string{GATHER_SOURCE_DIR} + "/docs/config.md"};
  std::stringstream doc;
  doc << in.rdbuf();
  CHECK(doc.str().find(std::string{"```json\n"} + contract_example + "\n```\n") != std::string::npos);
}
