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
  CHECK(a.tls == b.tls);
  CHECK(a.host == b.host);
  CHECK(a.port == b.port);
  CHECK(a.target == b.target);
  CHECK(a.key == b.key);
  CHECK(a.host_header == b.host_header);
  CHECK(a.tls_name == b.tls_name);
  CHECK(a.endpoint == b.endpoint);
}

} // namespace

TEST_CASE("a template's origin split once gives what the whole URL's split gives", "[unit][downstream][url]") {
  const auto origin = split_template_origin("http://Api.Example:8080/items/{capture.id}?q={query.q}");
  REQUIRE(origin);
  CHECK(origin->prefix == "http://Api.Example:8080");
  CHECK(origin->where.key == "http://api.example:8080");
  CHECK(origin->where.target.empty());
  for (const std::string url : {"http://Api.Example:8080/items/7?q=a%20b", "http://Api.Example:8080",
                                "http://Api.Example:8080?x=1", "http://Api.Example:8080/"}) {
    INFO(url);
    const auto whole = split_url(url);
    const auto pre = split_url(url, nullptr, origin.get());
    REQUIRE(whole);
    REQUIRE(pre);
    require_same_split(*pre, *whole);
  }
  const auto tls = split_template_origin("https://[::1]/v1");
  REQUIRE(tls);
  const auto pre = split_url("https://[::1]/v1?a", nullptr, tls.get());
  REQUIRE(pre);
  require_same_split(*pre, *split_url("https://[::1]/v1?a"));
  CHECK(pre->port == "443");
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
  CHECK(whole->host == "127.0.0.2");
  CHECK(whole->key == "http://127.0.0.2:81");
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
  CHECK(where->host == "127.0.0.3");
  CHECK(where->port == "9000");
  CHECK(where->key == "http://orders|127.0.0.3:9000|");
  CHECK(where->target == "/v1/7");
  CHECK(where->endpoint == target);
}
