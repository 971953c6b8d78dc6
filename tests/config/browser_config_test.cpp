// The `cors` and `compression` objects: defaults, what is refused, problems under their JSON paths.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

using nlohmann::json;

namespace {

json config_with(const std::string& key, json value) {
  json cfg = {{"routes",
               {{{"path", "/p"},
                 {"sections", {{{"name", "a"}, {"url", "http://127.0.0.1:1/a"}, {"timeout_ms", 100}, {"required", true}}}}}}}};
  cfg[key] = std::move(value);
  return cfg;
}

std::vector<std::string> browser_problems(const json& cfg) { return gather::load_config(cfg.dump()).problems; }

} // namespace

TEST_CASE("cors config: origins, headers, defaults", "[unit][cors][config]") {
  auto loaded = gather::load_config(
      config_with("cors", {{"allow_origins", {"https://Shop.Example.com", "http://127.0.0.1:3000", "http://[::1]:8080"}},
                    {"allow_headers", {"Authorization", "x-tenant", "AUTHORIZATION"}},
                    {"expose_headers", {"X-Request-Id"}}})
          .dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->cors);
  const auto& cors = *loaded.value->cors;
  CHECK(cors.allow_origins ==
        std::vector<std::string>{"https://shop.example.com", "http://127.0.0.1:3000", "http://[::1]:8080"});
  CHECK_FALSE(cors.any_origin);
  CHECK(cors.allow_headers == std::vector<std::string>{"authorization", "x-tenant"});
  CHECK(cors.expose_headers == std::vector<std::string>{"X-Request-Id"});
  CHECK(cors.max_age_s == 600);
  CHECK_FALSE(cors.allow_credentials);

  auto any = gather::load_config(config_with("cors", {{"allow_origins", {"*"}}}).dump());
  REQUIRE(any.value);
  CHECK(any.value->cors->any_origin);
  CHECK_FALSE(gather::load_config(config_with("listen", "127.0.0.1:0").dump()).value->cors);
}

TEST_CASE("cors config: problems by JSON path", "[unit][cors][config]") {
  CHECK(browser_problems(config_with("cors", {{"allow_origins", {"*"}}, {"allow_credentials", true}})) ==
        std::vector<std::string>{"cors.allow_credentials: must be false when allow_origins is [\"*\"] "
                                 "(list the origins to allow credentials)"});
  CHECK(browser_problems(config_with("cors", json::object())) ==
        std::vector<std::string>{"cors.allow_origins: is required (a non-empty array of origins like "
                                 "\"https://shop.example.com\" (scheme://host[:port], no path), or [\"*\"] for any origin)"});
  const auto bad = browser_problems(config_with("cors", {{"allow_origins", {"https://a.example/", "*", "a.example", 3,
                                                                "https://a.example:0", "https://a.example:70000"}},
                                             {"allow_headers", {"x-ok", "*", "bad header"}},
                                             {"max_age_s", 86401},
                                             {"color", "red"}}));
  CHECK(bad == std::vector<std::string>{
                   "cors.color: unknown key",
                   "cors.allow_origins[0]: must be an origin like \"https://shop.example.com\" (scheme://host[:port], no path, no trailing slash) or \"*\"",
                   "cors.allow_origins[1]: \"*\" must stand alone (it already allows every origin)",
                   "cors.allow_origins[2]: must be an origin like \"https://shop.example.com\" (scheme://host[:port], no path, no trailing slash) or \"*\"",
                   "cors.allow_origins[3]: must be an origin like \"https://shop.example.com\" (scheme://host[:port], no path, no trailing slash) or \"*\"",
                   "cors.allow_origins[4]: must be an origin like \"https://shop.example.com\" (scheme://host[:port], no path, no trailing slash) or \"*\"",
                   "cors.allow_origins[5]: must be an origin like \"https://shop.example.com\" (scheme://host[:port], no path, no trailing slash) or \"*\"",
                   "cors.allow_headers[1]: must be a header name (letters, digits and !#$%&'+-.^_`|~; no wildcard)",
                   "cors.allow_headers[2]: must be a header name (letters, digits and !#$%&'+-.^_`|~; no wildcard)",
                   "cors.max_age_s: must be an integer from 0 to 86400"});
  CHECK(browser_problems(config_with("cors", "yes")) == std::vector<std::string>{"cors: must be an object"});
}

TEST_CASE("compression config: defaults, order, problems by JSON path", "[unit][compression][config]") {
  auto loaded = gather::load_config(config_with("compression", json::object()).dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->compression);
  CHECK(loaded.value->compression->min_bytes == 1024);
  CHECK(loaded.value->compression->encodings ==
        std::vector<gather::content_coding>{gather::content_coding::br, gather::content_coding::gzip});
  auto gzip_first = gather::load_config(
      config_with("compression", {{"encodings", {"gzip", "br"}}, {"min_bytes", 0}, {"gzip_level", 9}, {"br_quality", 11}}).dump());
  REQUIRE(gzip_first.value);
  CHECK(gzip_first.value->compression->encodings.front() == gather::content_coding::gzip);
  CHECK(gzip_first.value->compression->min_bytes == 0);

  CHECK(browser_problems(config_with("compression", {{"encodings", {"gzip", "deflate", "gzip"}}, {"min_bytes", -1},
                                         {"gzip_level", 0}, {"br_quality", 12}, {"level", 3}})) ==
        std::vector<std::string>{"compression.level: unknown key",
                                 "compression.min_bytes: must be an integer from 0 to 1073741824",
                                 "compression.encodings[1]: must be \"br\" or \"gzip\"",
                                 "compression.encodings[2]: \"gzip\" is listed twice",
                                 "compression.gzip_level: must be an integer from 1 to 9",
                                 "compression.br_quality: must be an integer from 0 to 11"});
  CHECK(browser_problems(config_with("compression", {{"encodings", json::array()}})) ==
        std::vector<std::string>{"compression.encodings: must be a non-empty array of \"br\" and \"gzip\", in order of preference"});
}
