// A section's keys: name, url, fallback(_from), retry, cache_ttl_ms, fields, forward_headers.
#include <catch2/catch.hpp>

#include "gather/config/config.hpp"
#include "config/config_test_support.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;
using namespace gather::test::config_support;

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
