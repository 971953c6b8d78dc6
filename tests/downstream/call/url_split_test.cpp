// A URL template's origin split once (split_template_origin) against the whole URL split per call:
// the same fields for every URL rendered from the template, and the whole split wherever the
// origin does not apply (a placeholder in the host, another origin, an upstream's target).
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "gather/downstream/call/url_split.hpp"

using namespace gather;

namespace {

void require_same_split(const origin_and_target& a, const origin_and_target& b) {
  REQUIRE(a.origin);
  REQUIRE(b.origin);
  CHECK(a.origin->tls == b.origin->tls);
  CHECK(a.origin->host == b.origin->host);
  CHECK(a.origin->port == b.origin->port);
  CHECK(a.target == b.target);
  CHECK(a.origin->key == b.origin->key);
  CHECK(a.origin->host_header == b.origin->host_header);
  CHECK(a.origin->tls_name == b.origin->tls_name);
  CHECK(a.origin->endpoint == b.origin->endpoint);
}

} // namespace

TEST_CASE("a template's origin split once gives what the whole URL's split gives", "[unit][downstream][url]") {
  const auto origin = split_template_origin("http://Api.Example:8080/items/{capture.id}?q={query.q}");
  REQUIRE(origin);
  CHECK(origin->prefix == "http://Api.Example:8080");
  CHECK(origin->origin->key == "http://api.example:8080");
  for (const std::string url : {"http://Api.Example:8080/items/7?q=a%20b", "http://Api.Example:8080",
                                "http://Api.Example:8080?x=1", "http://Api.Example:8080/"}) {
    INFO(url);
    const auto whole = split_url(url);
    const auto pre = split_url(url, nullptr, origin.get());
    REQUIRE(whole);
    REQUIRE(pre);
    require_same_split(*pre, *whole);
    CHECK(pre->origin == origin->origin); // shared, not copied per call
  }
  const auto tls = split_template_origin("https://[::1]/v1");
  REQUIRE(tls);
  const auto pre = split_url("https://[::1]/v1?a", nullptr, tls.get());
  REQUIRE(pre);
  require_same_split(*pre, *split_url("https://[::1]/v1?a"));
  CHECK(pre->origin->port == "443");
}

TEST_CASE("a template whose origin cannot be split once splits each URL whole", "[unit][downstream][url]") {
  CHECK_FALSE(split_template_origin("http://{query.host}/x"));
  CHECK_FALSE(split_template_origin("http://h:{query.port}/x"));
  CHECK_FALSE(split_template_origin("ftp://h/x"));
  CHECK_FALSE(split_template_origin("http://user@h/x"));
  CHECK_FALSE(split_template_origin("http://h:0/x"));
  // No origin: the URL rendered with a host still goes where it says.
  const auto whole = split_url("http://127.0.0.2:81/x", nullptr, nullptr);
  REQUIRE(whole);
  CHECK(whole->origin->host == "127.0.0.2");
  CHECK(whole->origin->key == "http://127.0.0.2:81");
}

TEST_CASE("a URL that does not start with the split origin is split whole", "[unit][downstream][url]") {
  const auto origin = split_template_origin("http://a.example/x");
  REQUIRE(origin);
  // Another origin altogether, and one whose authority goes on past the prefix.
  for (const std::string url : {"http://b.example:90/y", "http://a.example.org/y", "http://a.example:81/y"}) {
    INFO(url);
    const auto pre = split_url(url, nullptr, origin.get());
    REQUIRE(pre);
    require_same_split(*pre, *split_url(url));
  }
  CHECK_FALSE(split_url("nope://a.example/x", nullptr, origin.get()));
}

TEST_CASE("an upstream's target wins over a split origin", "[unit][downstream][url]") {
  const auto origin = split_template_origin("http://orders/v1");
  REQUIRE(origin);
  auto target = std::make_shared<call_target>();
  target->address = "127.0.0.3";
  target->port = 9000;
  target->authority = "orders";
  target->pool_key = "orders|127.0.0.3:9000|";
  const auto where = split_url("http://orders/v1/7", target, origin.get());
  REQUIRE(where);
  CHECK(where->origin->host == "127.0.0.3");
  CHECK(where->origin->port == "9000");
  CHECK(where->origin->key == "http://orders|127.0.0.3:9000|");
  CHECK(where->target == "/v1/7");
  CHECK(where->origin->endpoint == target);
}
