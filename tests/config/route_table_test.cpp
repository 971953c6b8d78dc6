#include <catch2/catch.hpp>

#include "gather/config/route_table.hpp"

using gather::match_route;
using json = nlohmann::json;

namespace {

/// Routes with these paths, read through load_config so that segments are parsed as in production.
std::vector<gather::route_config> routes_for(const std::vector<std::string>& paths) {
  json routes = json::array();
  for (const std::string& path : paths) {
    const json section = {
        {"name", "a"}, {"url", "http://h/"}, {"timeout_ms", 1}, {"required", true}};
    routes.push_back({{"path", path}, {"sections", json::array({section})}});
  }
  const gather::config_result result = gather::load_config(json{{"routes", routes}}.dump());
  for (const std::string& problem : result.problems)
    UNSCOPED_INFO("problem: " << problem);
  REQUIRE(result.value.has_value());
  return result.value->routes;
}

using captures = std::vector<std::pair<std::string, std::string>>;

} // namespace

TEST_CASE("match_route finds the route and its captures", "[unit][route]") {
  const auto routes =
      routes_for({"/products/{id}", "/orders/status", "/", "/shops/{shop}/items/{item}"});

  const auto product = match_route(routes, "/products/42");
  REQUIRE(product);
  CHECK(product->route == 0);
  CHECK(product->captures == captures{{"id", "42"}});

  const auto orders = match_route(routes, "/orders/status");
  REQUIRE(orders);
  CHECK(orders->route == 1);
  CHECK(orders->captures.empty());

  const auto root = match_route(routes, "/");
  REQUIRE(root);
  CHECK(root->route == 2);

  const auto item = match_route(routes, "/shops/s1/items/i9");
  REQUIRE(item);
  CHECK(item->route == 3);
  CHECK(item->captures == captures{{"shop", "s1"}, {"item", "i9"}});
}

TEST_CASE("match_route refuses paths that match no route", "[unit][route]") {
  const auto routes = routes_for({"/products/{id}", "/orders/status"});
  CHECK_FALSE(match_route(routes, ""));
  CHECK_FALSE(match_route(routes, "products/42"));
  CHECK_FALSE(match_route(routes, "/"));
  CHECK_FALSE(match_route(routes, "/products"));
  CHECK_FALSE(match_route(routes, "/products/"));    // a capture never matches an empty segment
  CHECK_FALSE(match_route(routes, "/products/42/")); // no trailing-slash folding
  CHECK_FALSE(match_route(routes, "/products/42/x"));
  CHECK_FALSE(match_route(routes, "//products/42"));
  CHECK_FALSE(match_route(routes, "/orders/status/"));
  CHECK_FALSE(match_route(routes, "/Orders/status")); // literals are case-sensitive
  CHECK_FALSE(match_route(routes, "/orders/other"));
}

TEST_CASE("match_route splits before decoding: an encoded slash stays inside its capture",
          "[unit][route]") {
  const auto routes = routes_for({"/products/{id}", "/a/b/c"});

  const auto encoded_slash = match_route(routes, "/products/a%2Fb");
  REQUIRE(encoded_slash);
  CHECK(encoded_slash->route == 0);
  CHECK(encoded_slash->captures == captures{{"id", "a/b"}});

  const auto lower_hex = match_route(routes, "/products/..%2f..%2fadmin");
  REQUIRE(lower_hex);
  CHECK(lower_hex->captures == captures{{"id", "../../admin"}});

  const auto dots = match_route(routes, "/products/%2E%2E");
  REQUIRE(dots);
  CHECK(dots->captures == captures{{"id", ".."}});

  const auto unicode = match_route(routes, "/products/%E6%97%A5%20x");
  REQUIRE(unicode);
  CHECK(unicode->captures == captures{{"id", "\xE6\x97\xA5 x"}});

  CHECK_FALSE(match_route(routes, "/a%2Fb/c"));
  CHECK_FALSE(match_route(routes, "/a/b%2Fc"));
}

TEST_CASE("match_route compares literal segments with the decoded segment", "[unit][route]") {
  const auto routes = routes_for({"/orders/status", "/v1/a:b"});
  const auto encoded_letter = match_route(routes, "/orders/%73tatus");
  REQUIRE(encoded_letter);
  CHECK(encoded_letter->route == 0);
  const auto encoded_colon = match_route(routes, "/v1/a%3Ab");
  REQUIRE(encoded_colon);
  CHECK(encoded_colon->route == 1);
  CHECK(match_route(routes, "/v1/a:b"));
}

TEST_CASE("match_route keeps malformed escapes as written", "[unit][route]") {
  const auto routes = routes_for({"/products/{id}"});
  const auto malformed = match_route(routes, "/products/100%");
  REQUIRE(malformed);
  CHECK(malformed->captures == captures{{"id", "100%"}});
}
