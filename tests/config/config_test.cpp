#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "gather/config/config.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;

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

json config_section(const std::string& name, const std::string& url) {
  return {{"name", name}, {"url", url}, {"timeout_ms", 100}, {"required", true}};
}

json aggregate_route(const std::string& path, json sections) {
  return {{"path", path}, {"sections", std::move(sections)}};
}

/// A valid config with one aggregate route "/items/{id}" holding `sections`.
json with_sections(json sections) {
  return {{"routes", json::array({aggregate_route("/items/{id}", std::move(sections))})}};
}

/// A valid config: one route, one required section "a".
json minimal() { return with_sections(json::array({config_section("a", "http://h/a/{id}")})); }

json batch_route(json batch) { return {{"path", "/batch"}, {"batch", std::move(batch)}}; }

json minimal_batch() { return {{"url", "http://h/o/{item}"}, {"timeout_ms", 100}}; }

json with_batch(json batch) { return {{"routes", json::array({batch_route(std::move(batch))})}}; }

/// The minimal config with one top-level key set.
json with_top(const std::string& key, json value) {
  json document = minimal();
  document[key] = std::move(value);
  return document;
}

config_result load(const json& document) { return load_config(document.dump()); }

/// Whether some problem starts with `prefix` (a JSON path and ": ", possibly more).
bool has_problem(const config_result& result, const std::string& prefix) {
  for (const std::string& problem : result.problems) {
    if (problem.rfind(prefix, 0) == 0)
      return true;
  }
  return false;
}

/// Loads `document`, expects it to be refused with a problem starting with `prefix`.
void require_problem(const json& document, const std::string& prefix) {
  const config_result result = load(document);
  INFO("config: " << document.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  CHECK_FALSE(result.value.has_value());
  CHECK(has_problem(result, prefix));
}

gather::config require_valid(const json& document) {
  const config_result result = load(document);
  INFO("config: " << document.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  REQUIRE(result.value.has_value());
  REQUIRE(result.problems.empty());
  return *result.value;
}

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

TEST_CASE("URL templates are split into literal and placeholder parts", "[unit][config]") {
  const gather::config cfg = require_valid(with_sections(json::array({
      config_section("base", "http://h:81/items/{id}"),
      config_section("reviews", "https://h/r/{id}/{base.seller.id}?t={header.X-Tenant}&q={query.q}&x=1"),
  })));
  const std::vector<url_part>& parts = cfg.routes[0].sections[1].url.parts;
  REQUIRE(parts.size() == 9);
  CHECK(parts[0].what == url_part::kind::literal);
  CHECK(parts[0].text == "https://h/r/");
  CHECK(parts[1].what == url_part::kind::capture);
  CHECK(parts[1].text == "id");
  CHECK(parts[2].text == "/");
  CHECK(parts[3].what == url_part::kind::section);
  CHECK(parts[3].text == "base");
  CHECK(parts[3].section == 0);
  CHECK(parts[3].field == gather::field_path{"seller", "id"});
  CHECK(parts[4].text == "?t=");
  CHECK(parts[5].what == url_part::kind::header);
  CHECK(parts[5].text == "x-tenant");
  CHECK(parts[6].text == "&q=");
  CHECK(parts[7].what == url_part::kind::query);
  CHECK(parts[7].text == "q");
  CHECK(parts[8].what == url_part::kind::literal);
  CHECK(parts[8].text == "&x=1");
  CHECK(cfg.routes[0].sections[1].url.source ==
        "https://h/r/{id}/{base.seller.id}?t={header.X-Tenant}&q={query.q}&x=1");
  CHECK(cfg.routes[0].sections[1].depends_on == std::vector<std::size_t>{0});
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

TEST_CASE("top-level limits have ranges", "[unit][config]") {
  const auto with_top = [](const std::string& key, json value) {
    json document = minimal();
    document[key] = std::move(value);
    return document;
  };
  require_problem(with_top("max_inflight", 0),
                  "max_inflight: must be an integer from 1 to 1000000");
  require_problem(with_top("max_inflight", 1000001),
                  "max_inflight: must be an integer from 1 to 1000000");
  require_problem(with_top("max_body_bytes", 0),
                  "max_body_bytes: must be an integer from 1 to 1073741824");
  require_problem(with_top("max_response_bytes", 1073741825),
                  "max_response_bytes: must be an integer from 1 to 1073741824");
  CHECK(require_valid(with_top("max_inflight", 1000000)).max_inflight == 1000000);
  CHECK(require_valid(with_top("max_body_bytes", 1)).max_body_bytes == 1);
}

TEST_CASE("listen is host:port with a port from 0 to 65535", "[unit][config]") {
  const auto with_listen = [](json value) {
    json document = minimal();
    document["listen"] = std::move(value);
    return document;
  };
  require_problem(with_listen("localhost"), "listen: must be");
  require_problem(with_listen("localhost:65536"), "listen: must be");
  require_problem(with_listen(":8080"), "listen: must be");
  require_problem(with_listen("a b:80"), "listen: must be");
  require_problem(with_listen(8080), "listen: must be");
  CHECK(require_valid(with_listen("0.0.0.0:0")).listen == "0.0.0.0:0");
  CHECK(require_valid(with_listen("[::1]:9000")).listen == "[::1]:9000");
}

TEST_CASE("split_host_port accepts host:port only", "[unit][config]") {
  using gather::split_host_port;
  CHECK(split_host_port("127.0.0.1:8080") == std::make_pair(std::string("127.0.0.1"), 8080));
  CHECK(split_host_port("example.com:0") == std::make_pair(std::string("example.com"), 0));
  CHECK(split_host_port("[::1]:65535") == std::make_pair(std::string("::1"), 65535));
  CHECK_FALSE(split_host_port("host"));
  CHECK_FALSE(split_host_port("host:"));
  CHECK_FALSE(split_host_port(":80"));
  CHECK_FALSE(split_host_port("host:65536"));
  CHECK_FALSE(split_host_port("host:-1"));
  CHECK_FALSE(split_host_port("host:8o"));
  CHECK_FALSE(split_host_port("::1:80"));
  CHECK_FALSE(split_host_port("h/x:80"));
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

TEST_CASE("route paths are literal segments and whole-segment captures", "[unit][config]") {
  const auto with_path = [](json path) {
    json document = minimal();
    document["routes"][0]["path"] = std::move(path);
    document["routes"][0]["sections"][0]["url"] = "http://h/";
    return document;
  };
  require_problem(with_path(5), "routes[0].path: must be a string starting with \"/\"");
  require_problem(with_path("items"), "routes[0].path: must be a string starting with \"/\"");
  require_problem(with_path(""), "routes[0].path: must be a string starting with \"/\"");
  require_problem(with_path("/a//b"), "routes[0].path: empty segment");
  require_problem(with_path("/a/"), "routes[0].path: empty segment");
  require_problem(with_path("/a b"), "routes[0].path: segment \"a b\"");
  require_problem(with_path("/a%2Fb"), "routes[0].path: segment \"a%2Fb\"");
  require_problem(with_path("/a?x=1"), "routes[0].path: segment \"a?x=1\"");
  require_problem(with_path("/x{id}"), "routes[0].path: segment \"x{id}\"");
  require_problem(with_path("/{id"), "routes[0].path: segment \"{id\"");
  require_problem(with_path("/{1d}"), "routes[0].path: segment \"{1d}\"");
  require_problem(with_path("/{}"), "routes[0].path: segment \"{}\"");
  require_problem(with_path("/{a-b}"), "routes[0].path: segment \"{a-b}\"");
  require_problem(with_path("/a/.."), "routes[0].path: segment \"..\"");
  require_problem(with_path("/./a"), "routes[0].path: segment \".\"");
  require_problem(with_path("/{id}/x/{id}"), "routes[0].path: capture {id} appears twice");
  require_problem(with_path("/healthz"), "routes[0].path: \"/healthz\" is a built-in endpoint");
  require_problem(with_path("/metrics"), "routes[0].path: \"/metrics\" is a built-in endpoint");
  require_problem(with_path("/debug/actors"),
                  "routes[0].path: \"/debug/actors\" is a built-in endpoint");
  require_problem(with_path("/dashboard"), "routes[0].path: \"/dashboard\" is a built-in endpoint");

  CHECK(require_valid(with_path("/")).routes[0].segments.empty());
  CHECK(require_valid(with_path("/v1/a.b~c_d-e!$&'()*+,;=:@/{_X9}")).routes[0].segments.size() ==
        3);
  CHECK(require_valid(with_path("/healthz/{x}")).routes[0].segments.size() == 2);
}

TEST_CASE("a bad route path is not reported again through its captures", "[unit][config]") {
  json document = minimal();
  document["routes"][0]["path"] = "/items//{id}";
  const config_result result = load(document);
  REQUIRE(result.problems.size() == 1);
  CHECK(has_problem(result, "routes[0].path: empty segment"));
}

TEST_CASE("a route is either an aggregate or a batch route", "[unit][config]") {
  json both = minimal();
  both["routes"][0]["batch"] = minimal_batch();
  require_problem(both, "routes[0]: has both \"sections\" and \"batch\"");

  require_problem({{"routes", json::array({{{"path", "/a"}}})}}, "routes[0]: needs \"sections\"");

  json empty = minimal();
  empty["routes"][0]["sections"] = json::array();
  require_problem(empty, "routes[0].sections: must be a non-empty array");

  json not_array = minimal();
  not_array["routes"][0]["sections"] = config_section("a", "http://h/");
  require_problem(not_array, "routes[0].sections: must be a non-empty array");

  json not_object = minimal();
  not_object["routes"][0]["sections"].push_back("b");
  require_problem(not_object, "routes[0].sections[1]: must be an object");

  require_problem({{"routes", json::array({{{"path", "/b"}, {"batch", 1}}})}},
                  "routes[0].batch: must be an object");
}

TEST_CASE("route deadline_ms", "[unit][config]") {
  json deadline = minimal();
  deadline["routes"][0]["deadline_ms"] = 600001;
  require_problem(deadline, "routes[0].deadline_ms: must be an integer from 1 to 600000");
  deadline["routes"][0]["deadline_ms"] = 250;
  CHECK(require_valid(deadline).routes[0].deadline == millis(250));

  json beside_batch = with_batch(minimal_batch());
  beside_batch["routes"][0]["deadline_ms"] = 500;
  require_problem(beside_batch, "routes[0].deadline_ms: not allowed beside \"batch\"");
}

TEST_CASE("routes may not overlap", "[unit][config]") {
  const auto with_paths = [](std::vector<std::string> paths) {
    json routes = json::array();
    for (const std::string& path : paths)
      routes.push_back(aggregate_route(path, json::array({config_section("a", "http://h/")})));
    return json{{"routes", routes}};
  };
  require_problem(with_paths({"/a/{id}", "/a/b"}),
                  "routes[1].path: overlaps routes[0].path \"/a/{id}\"");
  require_problem(with_paths({"/a/b", "/a/{id}"}),
                  "routes[1].path: overlaps routes[0].path \"/a/b\"");
  require_problem(with_paths({"/{x}/b", "/a/{y}"}), "routes[1].path: overlaps routes[0].path");
  // One path written the same and one method: one request could take either.
  require_problem(with_paths({"/a", "/b", "/a"}),
                  "routes[2].method: routes[0] has the same path and method (GET /a)");
  require_problem(with_paths({"/", "/"}), "routes[1].method: routes[0] has the same path and method (GET /)");

  require_valid(with_paths({"/a/b", "/a/c", "/a", "/a/b/{x}", "/", "/{x}/d"}));

  // An aggregate route (GET) and a batch route (POST) may share a path; a batch route on another
  // path that overlaps it still overlaps.
  json batch_and_aggregate = with_paths({"/orders"});
  batch_and_aggregate["routes"].push_back({{"path", "/orders"}, {"batch", minimal_batch()}});
  require_valid(batch_and_aggregate);
  json overlapping = with_paths({"/orders/{id}"});
  overlapping["routes"].push_back({{"path", "/orders/status"}, {"batch", minimal_batch()}});
  require_problem(overlapping, "routes[1].path: overlaps routes[0].path");
}

TEST_CASE("section names", "[unit][config]") {
  const auto with_name = [](json name) {
    json document = minimal();
    document["routes"][0]["sections"][0]["name"] = std::move(name);
    return document;
  };
  const std::string prefix = "routes[0].sections[0].name: ";
  require_problem(with_name("Base"), prefix + "must match [a-z][a-z0-9_]*");
  require_problem(with_name("1a"), prefix + "must match");
  require_problem(with_name("a-b"), prefix + "must match");
  require_problem(with_name(""), prefix + "must match");
  require_problem(with_name(7), prefix + "must be a string");
  require_problem(with_name("query"), prefix + "\"query\" is reserved");
  require_problem(with_name("header"), prefix + "\"header\" is reserved");
  require_problem(with_name("item"), prefix + "\"item\" is reserved");
  require_valid(with_name("a_1"));

  json missing = minimal();
  missing["routes"][0]["sections"][0].erase("name");
  require_problem(missing, prefix + "is required");

  json duplicate = minimal();
  duplicate["routes"][0]["sections"].push_back(config_section("a", "http://h/"));
  require_problem(duplicate, "routes[0].sections[1].name: duplicate section name \"a\"");
}

TEST_CASE("section url", "[unit][config]") {
  const auto with_url = [](json url) {
    json document =
        with_sections(json::array({config_section("base", "http://h/"), config_section("a", "http://h/")}));
    document["routes"][0]["sections"][1]["url"] = std::move(url);
    return document;
  };
  const std::string prefix = "routes[0].sections[1].url: ";
  require_problem(with_url(1), prefix + "must be a string");
  require_problem(with_url("ftp://h/x"), prefix + "must start with http:// or https://");
  require_problem(with_url("HTTP://h/x"), prefix + "must start with http:// or https://");
  require_problem(with_url("/x/{id}"), prefix + "must start with http:// or https://");
  require_problem(with_url("http:///x"), prefix + "needs a host");
  require_problem(with_url("http://h/a b"), prefix + "must not contain spaces");
  require_problem(with_url("http://{id}/x"),
                  prefix + "placeholders are allowed only in the path and query");
  require_problem(with_url("http://h:{id}/x"),
                  prefix + "placeholders are allowed only in the path and query");
  require_problem(with_url("https://{base.host}"),
                  prefix + "placeholders are allowed only in the path and query");
  require_problem(with_url("http://h{query.h}?x=1"),
                  prefix + "placeholders are allowed only in the path and query");
  require_problem(with_url("http://h/{id"), prefix + "unbalanced \"{\"");
  require_problem(with_url("http://h/id}"), prefix + "unbalanced \"}\"");
  require_problem(with_url("http://h/{a{id}}"), prefix + "unbalanced");
  require_problem(with_url("http://h/{}"), prefix + "{}: empty name");
  require_problem(with_url("http://h/{base..x}"), prefix + "{base..x}: empty name");
  require_problem(with_url("http://h/{query.}"), prefix + "{query.}: empty name");
  require_problem(with_url("http://h/{nope}"),
                  prefix + "{nope}: the route path has no capture {nope}");
  require_problem(with_url("http://h/{item}"),
                  prefix + "{item}: the route path has no capture {item}");
  require_problem(with_url("http://h/{other.x}"),
                  prefix + "{other.x}: this route has no section \"other\"");
  require_problem(with_url("http://h/{a.x}"),
                  prefix + "{a.x}: a section cannot refer to its own data");
  require_problem(with_url("http://h/?t={header.x tenant}"),
                  prefix + "{header.x tenant}: \"x tenant\" is not a header name");
  json missing = with_url("");
  missing["routes"][0]["sections"][1].erase("url");
  require_problem(missing, prefix + "is required");

  require_valid(
      with_url("https://h:8443/x/{id}/{base.a.b}?q={query.page-size}&h={header.X-A}#frag"));
}

TEST_CASE("optional sections must say how they degrade", "[unit][config]") {
  json optional = minimal();
  optional["routes"][0]["sections"][0]["required"] = false;
  require_problem(
      optional, "routes[0].sections[0]: optional section needs \"fallback\" or \"fallback_from\"");
  optional["routes"][0]["sections"][0].erase("required");
  require_problem(
      optional, "routes[0].sections[0]: optional section needs \"fallback\" or \"fallback_from\"");

  optional["routes"][0]["sections"][0]["fallback"] = nullptr;
  require_problem(optional, "routes[0].sections[0].fallback: must not be null");

  for (const json& fallback :
       {json(0), json(""), json(false), json::array(), json::object(), json{{"a", nullptr}}}) {
    optional["routes"][0]["sections"][0]["fallback"] = fallback;
    CHECK(*require_valid(optional).routes[0].sections[0].fallback == fallback);
  }
}

TEST_CASE("fallback_from names another section's data", "[unit][config]") {
  const auto with_fallback_from = [](json from) {
    json document =
        with_sections(json::array({config_section("base", "http://h/"), config_section("a", "http://h/")}));
    document["routes"][0]["sections"][1]["required"] = false;
    document["routes"][0]["sections"][1]["fallback_from"] = std::move(from);
    return document;
  };
  const std::string prefix = "routes[0].sections[1].fallback_from: ";
  require_problem(with_fallback_from(1), prefix + "must be a string");
  require_problem(with_fallback_from(""), prefix + "must be a string");
  require_problem(with_fallback_from("base..x"), prefix + "must be a string");
  require_problem(with_fallback_from("other.x"), prefix + "this route has no section \"other\"");
  require_problem(with_fallback_from("a.x"), prefix + "a section cannot fall back to its own data");
  require_problem(with_fallback_from("a"), prefix + "a section cannot fall back to its own data");

  const gather::config whole = require_valid(with_fallback_from("base"));
  CHECK(whole.routes[0].sections[1].fallback_from->section == 0);
  CHECK(whole.routes[0].sections[1].fallback_from->field.empty());
  const gather::config field = require_valid(with_fallback_from("base.a.b"));
  CHECK(field.routes[0].sections[1].fallback_from->field == gather::field_path{"a", "b"});
}

TEST_CASE("retry", "[unit][config]") {
  const auto with_retry = [](json retry) {
    json document = minimal();
    document["routes"][0]["sections"][0]["retry"] = std::move(retry);
    return document;
  };
  const std::string prefix = "routes[0].sections[0].retry";
  require_problem(with_retry(3), prefix + ": must be an object");
  require_problem(with_retry({{"attempts", 0}}),
                  prefix + ".attempts: must be an integer from 1 to 10");
  require_problem(with_retry({{"attempts", 11}}),
                  prefix + ".attempts: must be an integer from 1 to 10");
  require_problem(with_retry({{"attempts", 2.0}}),
                  prefix + ".attempts: must be an integer from 1 to 10");
  require_problem(with_retry({{"backoff_ms", -1}}),
                  prefix + ".backoff_ms: must be an integer from 0 to 600000");
  require_problem(with_retry({{"multiplier", 0.5}}),
                  prefix + ".multiplier: must be a number from 1 to 10");
  require_problem(with_retry({{"multiplier", 11}}),
                  prefix + ".multiplier: must be a number from 1 to 10");
  require_problem(with_retry({{"multiplier", "2"}}),
                  prefix + ".multiplier: must be a number from 1 to 10");

  const gather::retry_policy retry =
      require_valid(with_retry({{"attempts", 10}, {"backoff_ms", 0}, {"multiplier", 1.5}}))
          .routes[0]
          .sections[0]
          .retry;
  CHECK(retry.attempts == 10);
  CHECK(retry.backoff == millis(0));
  CHECK(retry.multiplier == 1.5);
  CHECK(require_valid(with_retry({{"multiplier", 3}})).routes[0].sections[0].retry.multiplier ==
        3.0);
}

TEST_CASE("cache_ttl_ms", "[unit][config]") {
  json document = minimal();
  document["routes"][0]["sections"][0]["cache_ttl_ms"] = 86400001;
  require_problem(document,
                  "routes[0].sections[0].cache_ttl_ms: must be an integer from 0 to 86400000");
  document["routes"][0]["sections"][0]["cache_ttl_ms"] = 86400000;
  CHECK(require_valid(document).routes[0].sections[0].cache_ttl == millis(86400000));
}

TEST_CASE("fields are non-empty dotted paths", "[unit][config]") {
  const auto with_fields = [](json fields) {
    json document = minimal();
    document["routes"][0]["sections"][0]["fields"] = std::move(fields);
    return document;
  };
  const std::string prefix = "routes[0].sections[0].fields";
  require_problem(with_fields("a"), prefix + ": must be a non-empty array");
  require_problem(with_fields(json::array()), prefix + ": must be a non-empty array");
  require_problem(with_fields({"a", ""}), prefix + "[1]: must be a dotted field path");
  require_problem(with_fields({"a..b"}), prefix + "[0]: must be a dotted field path");
  require_problem(with_fields({".a"}), prefix + "[0]: must be a dotted field path");
  require_problem(with_fields({"a."}), prefix + "[0]: must be a dotted field path");
  require_problem(with_fields({1}), prefix + "[0]: must be a dotted field path");
  CHECK(require_valid(with_fields({"a.b", "c"})).routes[0].sections[0].fields ==
        std::vector<gather::field_path>{{"a", "b"}, {"c"}});
}

TEST_CASE("forward_headers are header names, never hop-by-hop ones", "[unit][config]") {
  const auto with_headers = [](json headers) {
    json document = minimal();
    document["routes"][0]["sections"][0]["forward_headers"] = std::move(headers);
    return document;
  };
  const std::string prefix = "routes[0].sections[0].forward_headers";
  require_problem(with_headers("x-a"), prefix + ": must be an array of header names");
  require_problem(with_headers({"x a"}), prefix + "[0]: must be a header name");
  require_problem(with_headers({""}), prefix + "[0]: must be a header name");
  require_problem(with_headers({"x-a", 3}), prefix + "[1]: must be a header name");
  for (const std::string name :
       {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
        "te", "trailer", "transfer-encoding", "upgrade", "host"})
    require_problem(with_headers({"x-a", name}),
                    prefix + "[1]: \"" + name + "\" is never forwarded");
  require_problem(with_headers({"HOST"}), prefix + "[0]: \"host\" is never forwarded");
  require_problem(with_headers({"Transfer-Encoding"}),
                  prefix + "[0]: \"transfer-encoding\" is never forwarded");

  CHECK(require_valid(with_headers({"X-Tenant", "x-tenant", "Accept-Language"}))
            .routes[0]
            .sections[0]
            .forward_headers == std::vector<std::string>{"x-tenant", "accept-language"});
}

TEST_CASE("depends_on lists the distinct sections a url reads", "[unit][config]") {
  json document = with_sections(json::array({
      config_section("a", "http://h/"),
      config_section("b", "http://h/"),
      config_section("c", "http://h/{b.x}/{a.y}/{b.z}"),
  }));
  document["routes"][0]["sections"][1]["required"] = false;
  document["routes"][0]["sections"][1]["fallback_from"] = "a.x";
  const gather::config cfg = require_valid(document);
  CHECK(cfg.routes[0].sections[0].depends_on.empty());
  CHECK(cfg.routes[0]
            .sections[1]
            .depends_on.empty()); // fallback_from orders, but does not gate the start
  CHECK(cfg.routes[0].sections[2].depends_on == std::vector<std::size_t>{0, 1});
}

TEST_CASE("resolve_order puts every section after what it waits for, ties in route order",
          "[unit][config]") {
  json document = with_sections(json::array({
      config_section("late", "http://h/{mid.x}"),
      config_section("free", "http://h/"),
      config_section("mid", "http://h/"),
      config_section("last", "http://h/"),
      config_section("other", "http://h/"),
  }));
  document["routes"][0]["sections"][2]["required"] = false;
  document["routes"][0]["sections"][2]["fallback_from"] = "last.v";
  CHECK(require_valid(document).routes[0].resolve_order == std::vector<std::size_t>{1, 3, 2, 0, 4});
}

TEST_CASE("dependency cycles are errors naming the cycle", "[unit][config]") {
  SECTION("through urls") {
    require_problem(with_sections(json::array(
                        {config_section("a", "http://h/{b.x}"), config_section("b", "http://h/{a.x}")})),
                    "routes[0].sections: dependency cycle: a -> b -> a");
  }
  SECTION("through three sections") {
    const config_result result = load(with_sections(json::array({
        config_section("a", "http://h/{c.x}"),
        config_section("b", "http://h/{a.x}"),
        config_section("c", "http://h/{b.x}"),
        config_section("d", "http://h/{a.x}"),
    })));
    REQUIRE(result.problems.size() == 1);
    CHECK(result.problems[0] == "routes[0].sections: dependency cycle: a -> c -> b -> a");
  }
  SECTION("through fallback_from") {
    json document =
        with_sections(json::array({config_section("a", "http://h/{b.x}"), config_section("b", "http://h/")}));
    document["routes"][0]["sections"][1]["required"] = false;
    document["routes"][0]["sections"][1]["fallback_from"] = "a";
    require_problem(document, "routes[0].sections: dependency cycle: a -> b -> a");
  }
}

TEST_CASE("a reference to a field that the section's projection drops is an error", "[unit][config]") {
  const auto referring = [](const std::string& url, json fallback_from) {
    json source = config_section("src", "http://h/");
    source["fields"] = {"a", "k.v"};
    json reader = config_section("reader", url);
    if (!fallback_from.is_null()) {
      reader["required"] = false;
      reader["fallback_from"] = std::move(fallback_from);
    }
    return with_sections(json::array({source, reader}));
  };
  require_problem(referring("http://h/{src.b}", nullptr),
                  "routes[0].sections[1].url: {src.b} reads a field that");
  require_problem(referring("http://h/{src.k}", nullptr),
                  "routes[0].sections[1].url: {src.k} reads a field that");
  require_problem(referring("http://h/", "src.b"),
                  "routes[0].sections[1].fallback_from: \"src.b\" reads a field that");
  require_valid(referring("http://h/{src.a}/{src.a.deep}/{src.k.v}", nullptr));
  require_valid(referring("http://h/", "src.k")); // the object {"v": ...} that the projection keeps
  require_valid(referring("http://h/", "src"));
}

TEST_CASE("batch routes", "[unit][config]") {
  const auto with = [](const std::string& key, json value) {
    json batch = minimal_batch();
    batch[key] = std::move(value);
    return with_batch(batch);
  };
  const std::string prefix = "routes[0].batch.";
  require_problem(with("url", "http://h/orders"), prefix + "url: must contain {item}");
  require_problem(with("url", "http://{item}/x"),
                  prefix + "url: placeholders are allowed only in the path and query");
  require_problem(with("url", "http://h/{item}/{base.x}"),
                  prefix + "url: {base.x}: a batch url cannot refer to sections");
  require_problem(with("url", "http://h/{item}/{id}"),
                  prefix + "url: {id}: the route path has no capture {id}");
  require_problem(with("max_items", 0), prefix + "max_items: must be an integer from 1 to 100000");
  require_problem(with("max_items", 100001),
                  prefix + "max_items: must be an integer from 1 to 100000");
  require_problem(with("concurrency", 0),
                  prefix + "concurrency: must be an integer from 1 to 10000");
  require_problem(with("timeout_ms", 600001),
                  prefix + "timeout_ms: must be an integer from 1 to 600000");
  require_problem(with("deadline_ms", 3600001),
                  prefix + "deadline_ms: must be an integer from 1 to 3600000");
  require_problem(with("retry", {{"attempts", 20}}),
                  prefix + "retry.attempts: must be an integer from 1 to 10");
  require_problem(with("fields", {""}), prefix + "fields[0]: must be a dotted field path");
  require_problem(with("forward_headers", {"upgrade"}),
                  prefix + "forward_headers[0]: \"upgrade\" is never forwarded");

  json no_timeout = minimal_batch();
  no_timeout.erase("timeout_ms");
  require_problem(with_batch(no_timeout), prefix + "timeout_ms: is required");
  json no_url = minimal_batch();
  no_url.erase("url");
  require_problem(with_batch(no_url), prefix + "url: is required");

  json item_capture = with_batch(minimal_batch());
  item_capture["routes"][0]["path"] = "/batch/{item}";
  require_problem(item_capture, "routes[0].path: capture {item} is not allowed in a batch route");

  json full = with_batch({{"url", "https://h/t/{tenant}/o/{item}?v={query.v}&h={header.X-H}"},
                          {"timeout_ms", 50},
                          {"max_items", 100000},
                          {"concurrency", 10000},
                          {"deadline_ms", 3600000},
                          {"fields", {"status"}},
                          {"forward_headers", {"Authorization"}}});
  full["routes"][0]["path"] = "/t/{tenant}/orders";
  const gather::batch_config batch = *require_valid(full).routes[0].batch;
  CHECK(batch.max_items == 100000);
  CHECK(batch.concurrency == 10000);
  CHECK(batch.deadline == millis(3600000));
  CHECK(batch.fields == std::vector<gather::field_path>{{"status"}});
  CHECK(batch.forward_headers == std::vector<std::string>{"authorization"});
  REQUIRE(batch.url.parts.size() == 8);
  CHECK(batch.url.parts[1].what == url_part::kind::capture);
  CHECK(batch.url.parts[3].what == url_part::kind::item);
  CHECK(batch.url.parts[5].what == url_part::kind::query);
  CHECK(batch.url.parts[7].what == url_part::kind::header);
  CHECK(batch.url.parts[7].text == "x-h");
}

TEST_CASE("cluster", "[unit][config]") {
  const auto with_cluster = [](json cluster) {
    json document = minimal();
    document["cluster"] = std::move(cluster);
    return document;
  };
  require_problem(with_cluster(json::array()), "cluster: must be an object");
  require_problem(with_cluster({{"nodes", "a:1"}}), "cluster.nodes: must be an array");
  require_problem(with_cluster({{"nodes", {"a:1", "nohost"}}}),
                  "cluster.nodes[1]: must be \"host:port\" with a port from 1 to 65535");
  require_problem(with_cluster({{"nodes", {"a:0"}}}),
                  "cluster.nodes[0]: must be \"host:port\" with a port from 1 to 65535");
  require_problem(with_cluster({{"nodes", {4242}}}), "cluster.nodes[0]: must be \"host:port\"");
  require_problem(with_cluster({{"nodes", {"a:1", "b:2", "a:01"}}}),
                  "cluster.nodes[2]: duplicate node \"a:01\"");

  const gather::config cfg = require_valid(
      with_cluster({{"nodes", {"127.0.0.1:4242", "127.0.0.1:4243"}}, {"local", false}}));
  REQUIRE(cfg.cluster.has_value());
  CHECK(cfg.cluster->nodes == std::vector<std::string>{"127.0.0.1:4242", "127.0.0.1:4243"});
  CHECK_FALSE(cfg.cluster->local);
  const gather::config defaults = require_valid(with_cluster(json::object()));
  CHECK(defaults.cluster->nodes.empty());
  CHECK(defaults.cluster->local);
}

// ---- config keys of the front (docs/config.md) -----------------------------------------------------------------

TEST_CASE("config: io_threads is an integer from 1 to 64", "[unit][front][config]") {
  const std::string io = "io_threads: must be an integer from 1 to 64";
  require_problem(with_top("io_threads", 0), io);
  require_problem(with_top("io_threads", 65), io);
  require_problem(with_top("io_threads", "x"), io);
  require_problem(with_top("io_threads", 2.5), io);
  CHECK(require_valid(with_top("io_threads", 64)).io_threads == 64);
  CHECK(require_valid(with_top("io_threads", 1)).io_threads == 1);
}

TEST_CASE("config: the inbound limits have ranges and defaults", "[unit][front][config]") {
  require_problem(with_top("max_connections", 0), "max_connections: must be an integer from 1 to 1000000");
  require_problem(with_top("max_connections", 1000001), "max_connections: must be an integer from 1 to 1000000");
  require_problem(with_top("max_request_line_bytes", 63), "max_request_line_bytes: must be an integer from 64");
  require_problem(with_top("max_header_bytes", 255), "max_header_bytes: must be an integer from 256");
  require_problem(with_top("max_headers", 0), "max_headers: must be an integer from 1");
  require_problem(with_top("request_timeout_ms", 0), "request_timeout_ms: must be an integer from 1");
  require_problem(with_top("keep_alive_idle_ms", 0), "keep_alive_idle_ms: must be an integer from 1");
  require_problem(with_top("keep_alive_idle_ms", "300"), "keep_alive_idle_ms: must be an integer from 1");

  const auto defaults = require_valid(minimal());
  CHECK(defaults.io_threads == 1);
  CHECK(defaults.inbound.max_connections == 10000);
  CHECK(defaults.inbound.max_request_line_bytes == 8192);
  CHECK(defaults.inbound.max_header_bytes == 16384);
  CHECK(defaults.inbound.max_headers == 100);
  CHECK(defaults.inbound.request_timeout == std::chrono::milliseconds{10000});
  CHECK(defaults.inbound.keep_alive_idle == std::chrono::milliseconds{60000});
  CHECK_FALSE(defaults.tls.has_value());

  json set = minimal();
  set["max_connections"] = 5;
  set["keep_alive_idle_ms"] = 300;
  set["request_timeout_ms"] = 1500;
  const auto cfg = require_valid(set);
  CHECK(cfg.inbound.max_connections == 5);
  CHECK(cfg.inbound.keep_alive_idle == std::chrono::milliseconds{300});
  CHECK(cfg.inbound.request_timeout == std::chrono::milliseconds{1500});
}

TEST_CASE("config: http2 limits have ranges and defaults, by JSON path", "[unit][front][config][h2]") {
  require_problem(with_top("http2", {{"max_concurrent_streams", 0}}),
                  "http2.max_concurrent_streams: must be an integer from 1 to 10000");
  require_problem(with_top("http2", {{"max_header_list_bytes", 100}}),
                  "http2.max_header_list_bytes: must be an integer from 256");
  require_problem(with_top("http2", {{"initial_window_bytes", 2147483648LL}}),
                  "http2.initial_window_bytes: must be an integer from 1 to 2147483647");
  require_problem(with_top("http2", {{"max_resets_per_second", "100"}}),
                  "http2.max_resets_per_second: must be an integer from 1");
  require_problem(with_top("http2", {{"max_pings", 3}}), "http2.max_pings: unknown key");
  require_problem(with_top("http2", 5), "http2: must be an object");

  const auto defaults = require_valid(minimal()).http2;
  CHECK(defaults.max_concurrent_streams == 100);
  CHECK(defaults.max_header_list_bytes == 32768);
  CHECK(defaults.initial_window_bytes == 65535);
  CHECK(defaults.max_resets_per_second == 100);
  CHECK(defaults.max_control_frames_per_second == 100);
  CHECK(defaults.max_continuation_frames == 8);
  CHECK(defaults.max_stream_buffer_bytes == 1048576);
  require_problem(with_top("http2", {{"max_stream_buffer_bytes", 10}}), "http2.max_stream_buffer_bytes");
  const auto set = require_valid(with_top("http2", {{"max_concurrent_streams", 7}, {"max_continuation_frames", 0}})).http2;
  CHECK(set.max_concurrent_streams == 7);
  CHECK(set.max_continuation_frames == 0);
  CHECK(set.max_header_list_bytes == 32768);
}

TEST_CASE("config: tls needs both files and no other key", "[unit][front][config]") {
  require_problem(with_top("tls", {{"cert_file", "c.pem"}}), "tls.key_file: is required");
  require_problem(with_top("tls", {{"key_file", "k.pem"}}), "tls.cert_file: is required");
  require_problem(with_top("tls", {{"cert_file", "c.pem"}, {"key_file", "k.pem"}, {"ca_file", "x"}}),
                  "tls.ca_file: unknown key");
  require_problem(with_top("tls", {{"cert_file", ""}, {"key_file", "k.pem"}}),
                  "tls.cert_file: must be a non-empty file name");
  require_problem(with_top("tls", {{"cert_file", 1}, {"key_file", "k.pem"}}), "tls.cert_file:");
  require_problem(with_top("tls", "c.pem"), "tls:");
  // The files themselves are checked by gather check/serve (tls_problems), not by the parser.
  const auto cfg = require_valid(with_top("tls", {{"cert_file", "c.pem"}, {"key_file", "k.pem"}}));
  REQUIRE(cfg.tls.has_value());
  CHECK(cfg.tls->cert_file == "c.pem");
  CHECK(cfg.tls->key_file == "k.pem");
}

TEST_CASE("config: a $schema key is accepted and ignored", "[unit][front][config]") {
  const auto cfg = require_valid(with_top("$schema", "x"));
  CHECK(cfg.routes.size() == 1);
  require_problem(with_top("$schemas", "x"), "$schemas: unknown key");
}

TEST_CASE("a url's port is a number from 1 to 65535", "[unit][config]") {
  for (const char* url : {"http://h:0/a/{id}", "http://h:65536/a/{id}", "http://h:99999999999/a/{id}",
                          "http://h:8x/a/{id}", "http://[::1]:70000/a/{id}"}) {
    INFO(url);
    require_problem(with_sections(json::array({config_section("a", url)})),
                    "routes[0].sections[0].url: the port must be a number from 1 to 65535");
  }
  require_valid(with_sections(json::array({config_section("a", "http://h:65535/a/{id}")})));
  require_valid(with_sections(json::array({config_section("a", "http://[::1]:8080/a/{id}")})));
}

TEST_CASE("docs/config.md's example is the configuration the tests load", "[unit][config]") {
  std::ifstream in{std::string{GATHER_SOURCE_DIR} + "/docs/config.md"};
  std::stringstream doc;
  doc << in.rdbuf();
  CHECK(doc.str().find(std::string{"```json\n"} + contract_example + "\n```\n") != std::string::npos);
}

// ---- the downstream pools' bounds (docs/config.md) ----------------------------------------------------------------

TEST_CASE("config: downstream_idle_timeout_ms, downstream_drain_quiet_ms, downstream_alpn_memory_ms and downstream_max_idle_connections have ranges and defaults",
          "[unit][downstream][config]") {
  const auto defaults = require_valid(with_top("io_threads", 1));
  CHECK(defaults.downstream_idle_timeout == std::chrono::milliseconds{60000});
  CHECK(defaults.downstream_drain_quiet == std::chrono::milliseconds{1000});
  CHECK(require_valid(with_top("downstream_idle_timeout_ms", 0)).downstream_idle_timeout.count() == 0); // never
  CHECK(require_valid(with_top("downstream_drain_quiet_ms", 250)).downstream_drain_quiet.count() == 250);
  require_problem(with_top("downstream_idle_timeout_ms", -1), "downstream_idle_timeout_ms: must be an integer from 0 to 3600000");
  require_problem(with_top("downstream_idle_timeout_ms", "60s"), "downstream_idle_timeout_ms: must be an integer from 0 to 3600000");
  require_problem(with_top("downstream_drain_quiet_ms", 0), "downstream_drain_quiet_ms: must be an integer from 1 to 600000");
  require_problem(with_top("downstream_drain_quiet_ms", 600001), "downstream_drain_quiet_ms: must be an integer from 1 to 600000");
  CHECK(defaults.downstream_alpn_memory == std::chrono::milliseconds{60000});
  CHECK(require_valid(with_top("downstream_alpn_memory_ms", 0)).downstream_alpn_memory.count() == 0); // ask every time
  require_problem(with_top("downstream_alpn_memory_ms", -1), "downstream_alpn_memory_ms: must be an integer from 0 to 86400000");
  require_problem(with_top("downstream_alpn_memory_ms", 86400001), "downstream_alpn_memory_ms: must be an integer from 0 to 86400000");
  CHECK(defaults.downstream_max_idle_connections == 1024);
  CHECK(require_valid(with_top("downstream_max_idle_connections", 0)).downstream_max_idle_connections == 0); // none kept
  require_problem(with_top("downstream_max_idle_connections", -1), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
  require_problem(with_top("downstream_max_idle_connections", 1000001), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
  require_problem(with_top("downstream_max_idle_connections", "many"), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
}
