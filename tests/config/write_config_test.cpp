// Write routes as `gather check` reads them (docs/config.md#write-routes): `method`, `write`,
// `{body...}` placeholders, routes sharing a path, and every rule of a write, each problem under
// its JSON path.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

using gather::load_config;
using json = nlohmann::json;

namespace {

json http_write(json extra = json::object()) {
  json write = {{"name", "add"}, {"url", "http://127.0.0.1:9001/carts/{cart}/items"}, {"timeout_ms", 300}};
  for (auto& [k, v] : extra.items())
    write[k] = v;
  return write;
}

json write_route(json write, json extra = json::object()) {
  json route = {{"path", "/carts/{cart}/items"}, {"method", "POST"}, {"write", std::move(write)}};
  for (auto& [k, v] : extra.items())
    route[k] = v;
  return route;
}

json doc(json routes) { return {{"routes", std::move(routes)}}; }

std::vector<std::string> problems_of(const json& cfg) {
  auto loaded = load_config(cfg.dump());
  if (!loaded.value)
    return loaded.problems;
  return gather::attach_proto_catalog(*loaded.value);
}

bool has_write_problem(const json& cfg, const std::string& text) {
  const auto all = problems_of(cfg);
  const bool found = std::any_of(all.begin(), all.end(), [&](const std::string& p) { return p == text; });
  if (!found)
    for (const auto& p : all)
      UNSCOPED_INFO("problem: " << p);
  return found;
}

json cart_write(json message) {
  return {{"name", "add"}, {"timeout_ms", 300},
          {"grpc", {{"target", "http://127.0.0.1:50051"}, {"method", "shop.v1.Cart/AddItem"},
                    {"message", std::move(message)}}}};
}

json with_cart_set(json cfg) {
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_CART_DESCRIPTOR_SET}}};
  return cfg;
}

} // namespace

TEST_CASE("write config: a write route is read, the write last, every read waiting for it",
          "[unit][config][write]") {
  const json reads = json::array({{{"name", "cart"}, {"url", "http://127.0.0.1:9002/carts/{cart}?sku={body.sku}"},
                                   {"timeout_ms", 200}, {"required", true}},
                                  {{"name", "recs"}, {"url", "http://127.0.0.1:9003/for/{add.cart_id}"},
                                   {"timeout_ms", 200}, {"fallback", json::array()}}});
  auto loaded = load_config(doc({write_route(http_write({{"pass_errors", true}, {"method", "PUT"},
                                                         {"body", {{"sku", "{body.sku}"}, {"n", 1}}}}),
                                             {{"sections", reads}})})
                                .dump());
  INFO((loaded.problems.empty() ? "" : loaded.problems.front()));
  REQUIRE(loaded.value);
  const auto& route = loaded.value->routes[0];
  CHECK(route.method == "POST");
  CHECK(route.has_write);
  REQUIRE(route.sections.size() == 3);
  const auto& write = route.sections.back();
  CHECK(write.name == "add");
  CHECK(write.write);
  CHECK(write.required);
  CHECK(write.pass_errors);
  CHECK_FALSE(write.idempotent);
  CHECK(write.method == "PUT");
  REQUIRE(write.body);
  REQUIRE(write.body_placeholders.size() == 1);
  CHECK(write.body_placeholders[0].pointer == "/sku");
  CHECK(write.body_placeholders[0].whole);
  CHECK(route.sections[0].depends_on == std::vector<std::size_t>{2});
  CHECK(route.sections[1].depends_on == std::vector<std::size_t>{2});
  const auto& body_part = route.sections[0].url.parts[3];
  CHECK(body_part.what == gather::url_part::kind::body);
  CHECK(body_part.field == gather::field_path{"sku"});
  CHECK(route.resolve_order.front() == 2);
}

TEST_CASE("write config: a write route without reads, and the method defaults", "[unit][config][write]") {
  auto loaded = load_config(doc({write_route(http_write(), {{"method", "DELETE"}})}).dump());
  REQUIRE(loaded.value);
  CHECK(loaded.value->routes[0].sections.size() == 1);
  CHECK(loaded.value->routes[0].sections[0].method == "DELETE"); // the route's
  auto plain = load_config(doc({{{"path", "/a"}, {"sections", {{{"name", "a"}, {"url", "http://h:1/a"},
                                                                 {"timeout_ms", 10}, {"required", true}}}}}})
                               .dump());
  REQUIRE(plain.value);
  CHECK(plain.value->routes[0].method == "GET");
  CHECK_FALSE(plain.value->routes[0].has_write);
}

TEST_CASE("write config: routes share a path by method, Allow learns them all", "[unit][config][write]") {
  json get = {{"path", "/carts/{cart}/items"}, {"sections", {{{"name", "cart"}, {"url", "http://h:1/c/{cart}"},
                                                                {"timeout_ms", 10}, {"required", true}}}}};
  auto loaded = load_config(doc({get, write_route(http_write()), write_route(http_write(), {{"method", "DELETE"}})})
                                .dump());
  REQUIRE(loaded.value);
  for (const auto& route : loaded.value->routes)
    CHECK(route.same_path == std::vector<std::size_t>{0, 1, 2});
  CHECK(has_write_problem(doc({write_route(http_write()), write_route(http_write())}),
                          "routes[1].method: routes[0] has the same path and method (POST /carts/{cart}/items)"));
  // Another path that overlaps is still an overlap, whatever the methods.
  json other = {{"path", "/carts/{x}/items"}, {"method", "PUT"}, {"write", http_write()}};
  CHECK(has_write_problem(doc({write_route(http_write()), other}),
                          "routes[1].path: overlaps routes[0].path \"/carts/{cart}/items\""));
}

TEST_CASE("write config: every rule of a write, by JSON path", "[unit][config][write]") {
  const std::string w = "routes[0].write.";
  CHECK(has_write_problem(doc({write_route(http_write(), {{"method", "GET"}})}),
                          "routes[0].write: needs a \"method\" that takes a body (POST, PUT, PATCH or DELETE): a GET only reads"));
  CHECK(has_write_problem(doc({write_route(http_write(), {{"method", "post"}})}),
                          "routes[0].method: must be one of GET, POST, PUT, PATCH, DELETE"));
  CHECK(has_write_problem(doc({{{"path", "/a"}, {"method", "POST"}}}),
                          "routes[0]: needs \"sections\", \"write\" or both (a POST route)"));
  CHECK(has_write_problem(doc({write_route(http_write({{"fallback", json::object()}}))}),
                          w + "fallback: a write has no fallback: it is always required"));
  CHECK(has_write_problem(doc({write_route(http_write({{"fallback_from", "x"}}))}),
                          w + "fallback_from: a write has no fallback: it is always required"));
  CHECK(has_write_problem(doc({write_route(http_write({{"cache_ttl_ms", 100}}))}),
                          w + "cache_ttl_ms: a write is never cached"));
  CHECK(has_write_problem(doc({write_route(http_write({{"hedge", {{"after_ms", 10}}}, {"idempotent", true}}))}),
                          w + "hedge: a write is never hedged (a second call could write twice)"));
  CHECK(has_write_problem(doc({write_route(http_write({{"retry", {{"attempts", 2}}}}))}),
                          w + "retry: a write is retried only with \"idempotent\": true (a retry could write twice)"));
  CHECK(problems_of(doc({write_route(http_write({{"retry", {{"attempts", 2}}}, {"idempotent", true}}))})).empty());
  CHECK(has_write_problem(doc({write_route(http_write({{"required", false}}))}),
                          w + "required: a write is always required (leave it out)"));
  CHECK(has_write_problem(doc({write_route(http_write({{"method", "FETCH"}}))}),
                          w + "method: must be one of GET, POST, PUT, PATCH, DELETE"));
  CHECK(has_write_problem(doc({write_route(http_write({{"warning", "x"}}))}),
                          w + "warning: unknown key"));
  CHECK(has_write_problem(doc({write_route(http_write({{"url", "http://h:1/{other.id}"}}),
                                           {{"sections", {{{"name", "other"}, {"url", "http://h:1/o"},
                                                           {"timeout_ms", 10}, {"required", true}}}}})}),
                          w + "url: {other.id}: the write runs first, before any section: it cannot read a section's data"));
  CHECK(has_write_problem(doc({write_route(http_write(), {{"sections", {{{"name", "add"}, {"url", "http://h:1/o"},
                                                                        {"timeout_ms", 10}, {"required", true}}}}})}),
                          w + "name: duplicate section name \"add\" (also sections[0])"));
  CHECK(has_write_problem(doc({{{"path", "/b"}, {"method", "POST"}, {"batch", {{"url", "http://h:1/{item}"}, {"timeout_ms", 10}}},
                                {"write", http_write()}}}),
                          "routes[0]: has both \"write\" and \"batch\" (a batch route's items are only read)"));
  CHECK(has_write_problem(doc({{{"path", "/b"}, {"method", "PUT"}, {"batch", {{"url", "http://h:1/{item}"}, {"timeout_ms", 10}}}}}),
                          "routes[0].method: a batch route is served on POST"));
}

TEST_CASE("write config: {body...} only where a body comes, and body, client are not section names",
          "[unit][config][write]") {
  json get = {{"path", "/a"}, {"sections", {{{"name", "a"}, {"url", "http://h:1/a/{body.x}"},
                                               {"timeout_ms", 10}, {"required", true}}}}};
  CHECK(has_write_problem(doc({get}), "routes[0].sections[0].url: {body.x}: {body...} needs a route whose \"method\" takes a body (POST, PUT, PATCH, DELETE)"));
  json named = {{"path", "/a"}, {"method", "POST"}, {"sections", {{{"name", "body"}, {"url", "http://h:1/a"},
                                                                      {"timeout_ms", 10}, {"required", true}}}}};
  CHECK(has_write_problem(doc({named}), "routes[0].sections[0].name: \"body\" is reserved: {query.q}, {header.h}, {claim.c}, {body.b}, {client.ip} and {item} mean something else in templates"));
  named["sections"][0]["name"] = "client";
  CHECK(problems_of(doc({named})).size() == 1);
}

TEST_CASE("write config: a gRPC write against the descriptors", "[unit][config][write][grpc]") {
  const std::string g = "routes[0].write.grpc.";
  CHECK(problems_of(with_cart_set(doc({write_route(cart_write({{"cart_id", "{cart}"}, {"sku", "{body.sku}"},
                                                               {"quantity", "{body.quantity}"}}))})))
            .empty());
  CHECK(problems_of(with_cart_set(doc({write_route(cart_write("{body}"))}))).empty());
  CHECK(has_write_problem(with_cart_set(doc({write_route(cart_write({{"cart_id", "{cart}"}, {"colour", "{body.c}"}}))})),
                          g + "message.colour: shop.v1.AddItemRequest has no field \"colour\""));
  CHECK(has_write_problem(with_cart_set(doc({write_route(cart_write("{body.sku}"))})),
                          g + "message: must be a JSON object (the request message in the proto3 JSON mapping) or \"{body}\""));
  auto with_body = cart_write("{body}");
  with_body["body"] = json::object();
  CHECK(has_write_problem(with_cart_set(doc({write_route(with_body)})),
                          "routes[0].write.body: only for an HTTP write (a gRPC write's request is its grpc.message)"));
}
