// `shared`, `rate_limit.shared` and `cache_shared` as `gather check` reads them (docs/shared.md):
// defaults, values, and one problem per mistake under its JSON path. Nothing connects.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gather/config/config.hpp"

using gather::load_config;
using json = nlohmann::json;

namespace {

json shared_doc(json shared, json limit_extra = json::object(), json section_extra = json::object()) {
  json section = {{"name", "s"}, {"url", "http://127.0.0.1:9001/x"}, {"timeout_ms", 300},
                  {"required", true}};
  for (auto& [k, v] : section_extra.items())
    section[k] = v;
  json route = {{"path", "/p"}, {"sections", {section}}};
  if (!limit_extra.empty()) {
    json limit = {{"per", "ip"}, {"rate_per_s", 10}};
    for (auto& [k, v] : limit_extra.items())
      limit[k] = v;
    route["rate_limit"] = limit;
  }
  json document = {{"routes", {route}}};
  if (!shared.is_null())
    document["shared"] = std::move(shared);
  return document;
}

std::vector<std::string> shared_problems(const json& document) {
  return load_config(document.dump()).problems;
}

} // namespace

TEST_CASE("shared: the defaults and every key read", "[unit][config][shared]") {
  auto loaded = load_config(shared_doc({{"redis", "redis://127.0.0.1:6380/2"}}).dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->shared);
  const auto& shared = *loaded.value->shared;
  CHECK(shared.host == "127.0.0.1");
  CHECK(shared.port == 6380);
  CHECK(shared.db == 2);
  CHECK(shared.password_file.empty());
  CHECK(shared.prefix == "gather:");
  CHECK(shared.timeout.count() == 20);
  CHECK(shared.sync.count() == 50);

  loaded = load_config(shared_doc({{"redis", "redis://cache.internal"}, {"password_file", "/etc/p"},
                                   {"prefix", "shop:"}, {"timeout_ms", 5}, {"sync_ms", 1}},
                                  {{"shared", true}}, {{"cache_ttl_ms", 1000}, {"cache_shared", false}})
                           .dump());
  REQUIRE(loaded.value);
  CHECK(loaded.value->shared->host == "cache.internal");
  CHECK(loaded.value->shared->port == 6379);
  CHECK(loaded.value->shared->db == 0);
  CHECK(loaded.value->shared->password_file == "/etc/p");
  CHECK(loaded.value->shared->prefix == "shop:");
  CHECK(loaded.value->shared->timeout.count() == 5);
  CHECK(loaded.value->shared->sync.count() == 1);
  CHECK(loaded.value->routes[0].rate_limit->shared);
  CHECK(!loaded.value->routes[0].sections[0].cache_shared);

  loaded = load_config(shared_doc({{"redis", "redis://[::1]:7000"}}).dump());
  REQUIRE(loaded.value);
  CHECK(loaded.value->shared->host == "::1");
  CHECK(loaded.value->shared->port == 7000);
  CHECK(!load_config(shared_doc(nullptr).dump()).value->shared);
}

TEST_CASE("shared: each mistake is one problem under its JSON path", "[unit][config][shared]") {
  using list = std::vector<std::string>;
  const json redis = {{"redis", "redis://127.0.0.1:6379"}};
  auto with = [&](const char* key, json value) {
    json shared = redis;
    shared[key] = std::move(value);
    return shared_doc(shared);
  };
  const std::string url_expected =
      "must be \"redis://host[:port][/db]\" (db a number from 0 to 65535)";
  CHECK(shared_problems(shared_doc(json::object())) ==
        list{"shared.redis: is required (a string \"redis://host[:port][/db]\" (db a number "
             "from 0 to 65535))"});
  for (const char* bad : {"http://127.0.0.1:6379", "redis://", "redis://h:0", "redis://h:99999",
                          "redis://h:1/x", "redis://h:1/", "redis://h h:1", "rediss://h:1"})
    CHECK(shared_problems(with("redis", bad)) == list{std::string("shared.redis: ") + url_expected});
  CHECK(shared_problems(shared_doc("redis://h")) == list{"shared: must be an object"});
  CHECK(shared_problems(with("password_file", "")) ==
        list{"shared.password_file: must be a non-empty file name"});
  CHECK(shared_problems(with("prefix", "has space")).size() == 1);
  CHECK(shared_problems(with("prefix", "")).front().rfind("shared.prefix: must be", 0) == 0);
  CHECK(shared_problems(with("timeout_ms", 0)) ==
        list{"shared.timeout_ms: must be an integer from 1 to 1000"});
  CHECK(shared_problems(with("timeout_ms", 1001)).size() == 1);
  CHECK(shared_problems(with("sync_ms", -1)) ==
        list{"shared.sync_ms: must be an integer from 0 to 1000"});
  CHECK(shared_problems(with("sync_ms", 1001)).size() == 1);
  CHECK(shared_problems(with("password", "secret")) == list{"shared.password: unknown key"});
}

TEST_CASE("shared: what needs the store without one is an error by JSON path", "[unit][config][shared]") {
  using list = std::vector<std::string>;
  const std::string needs = "needs the top-level \"shared\" (the store to share through)";
  CHECK(shared_problems(shared_doc(nullptr, {{"shared", true}})) ==
        list{"routes[0].rate_limit.shared: " + needs});

  // false needs nothing; an invalid `shared` is reported once, not again by its users.
  CHECK(shared_problems(shared_doc(nullptr, {{"shared", false}})).empty());
  CHECK(shared_problems(shared_doc({{"redis", 1}}, {{"shared", true}})).size() == 1);
  const json redis = {{"redis", "redis://127.0.0.1:6379"}};
  CHECK(shared_problems(shared_doc(redis, {}, {{"cache_shared", false}})).empty());
  CHECK(shared_problems(shared_doc(redis, {{"shared", "yes"}})) ==
        list{"routes[0].rate_limit.shared: must be true or false"});
}

TEST_CASE("shared: the shared cache needs the store and a TTL, by JSON path", "[unit][config][shared]") {
  using list = std::vector<std::string>;
  const json redis = {{"redis", "redis://127.0.0.1:6379"}};
  CHECK(shared_problems(shared_doc(redis, {}, {{"cache_ttl_ms", 100}, {"cache_shared", true}})).empty());
  const std::string path = "routes[0].sections[0].cache_shared: ";
  CHECK(shared_problems(shared_doc(nullptr, {}, {{"cache_ttl_ms", 100}, {"cache_shared", true}})) ==
        list{path + "needs the top-level \"shared\" (the store to share through)"});
  CHECK(shared_problems(shared_doc(redis, {}, {{"cache_shared", true}})) ==
        list{path + "needs cache_ttl_ms: only cached data is shared"});
  CHECK(shared_problems(shared_doc(redis, {}, {{"cache_ttl_ms", 100}, {"cache_shared", "yes"}})) ==
        list{path + "must be true or false"});
}
