// Routes: paths and captures, aggregate or batch, deadline_ms, overlaps, and batch routes' keys.
#include <catch2/catch.hpp>

#include "gather/config/config.hpp"
#include "config/config_test_support.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;
using namespace gather::test::config_support;

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
