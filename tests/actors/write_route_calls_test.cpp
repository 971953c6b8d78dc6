// A write's call and what its answer becomes: passed on, rejected, 503 or 504, retried, degraded.
//
// Write routes over HTTP end to end (docs/api.md#write-routes): a real gateway, a downstream that
// records every request byte for byte (tests/support/recording_server), real clients.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/recording_server.hpp"
#include "actors/write_route_test_support.hpp"

using json = nlohmann::json;
using gather::test::raw_connection;
using gather::test::recorded_answer;
using gather::test::recorded_request;
using gather::test::recording_server;
using gather::test::running_gateway;
using namespace gather::test::write_route_support;

TEST_CASE("write: the client's body byte for byte, then the reads, which see its data", "[write]") {
  cart_downstream down;
  running_gateway gw(add_route(down.server));
  const std::string body = "{ \"sku\" :\"b-1\",  \"quantity\":3 }";
  const auto r = send_raw(gw.port(), request_bytes("POST", "/carts/42/items",
                                                   "Content-Type: application/json; charset=utf-8\r\n"
                                                   "Idempotency-Key: k-123\r\nX-Tenant: t1\r\n",
                                                   body));
  REQUIRE(r.status == 201); // the write's 201 passed on
  const auto answer = json::parse(r.body);
  CHECK(answer["data"]["add"] == json{{"cart_id", "c7"}, {"count", 3}});
  CHECK(answer["data"]["cart"]["lines"][0]["quantity"] == 3);
  CHECK(answer["sections"]["add"]["status"] == "ok");
  CHECK(answer["degraded"] == false);
  const auto seen = down.server.requests();
  REQUIRE(seen.size() == 2);
  const auto& write = seen[0]; // first and alone
  CHECK(write.method == "POST");
  CHECK(write.target == "/carts/42/items");
  CHECK(write.body == body);
  CHECK(write.header("content-type") == "application/json");
  CHECK(write.count("content-type") == 1);
  CHECK(write.header("idempotency-key") == "k-123");
  CHECK(write.header("x-tenant") == "t1");
  CHECK(write.header("x-request-id") == r.header("x-request-id"));
  const auto& read = seen[1];
  CHECK(read.method == "GET");
  CHECK(read.target == "/carts/c7?sku=b-1"); // {add.cart_id} and {body.sku}
  CHECK(read.count("idempotency-key") == 0); // forwarded to the write only, even when listed
  CHECK(read.header("x-tenant") == "t1");
  CHECK(read.body.empty());
}

TEST_CASE("write: its method and body template, {body...} percent-encoded in a URL", "[write]") {
  cart_downstream down;
  auto cfg = add_route(down.server, {{"method", "PUT"},
                                     {"body", {{"item", {{"sku", "{body.sku}"}, {"n", "{body.quantity}"}}},
                                               {"note", "for {cart}: {body.note}"}, {"gift", "{body.gift}"},
                                               {"absent", "{body.nothing}"}}}});
  running_gateway gw(cfg);
  const auto r = gw.post("/carts/42/items", R"({"sku": "a/b?c", "quantity": 2, "gift": {"wrap": true}})");
  REQUIRE(r);
  REQUIRE(r->status == 201);
  const auto seen = down.server.requests();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].method == "PUT");
  // A whole placeholder keeps its JSON type; a missing field is left out; other text is text.
  CHECK(json::parse(seen[0].body) == json{{"item", {{"sku", "a/b?c"}, {"n", 2}}}, {"note", "for 42: "},
                                          {"gift", {{"wrap", true}}}});
  CHECK(seen[1].target == "/carts/c7?sku=a%2Fb%3Fc");
}

TEST_CASE("write: 202 passes on, 204 without reads is a bare 204, a 2xx without a body is null", "[write]") {
  cart_downstream down;
  SECTION("202") {
    down.write_answer = {202, R"({"cart_id":"c7"})", {}};
    running_gateway gw(add_route(down.server));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
    REQUIRE(r);
    CHECK(r->status == 202);
  }
  SECTION("204 and no reads") {
    down.write_answer = {204, "", {}};
    running_gateway gw(add_route(down.server, json::object(), json::object(), false));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
    REQUIRE(r);
    CHECK(r->status == 204);
    CHECK(r->body.empty());
  }
  SECTION("200 with an empty body, and reads: the write's data is null") {
    down.write_answer = {200, "", {}};
    running_gateway gw(add_route(down.server, json::object(),
                                 {{"sections", {{{"name", "cart"}, {"url", down.server.base_url() + "/carts/{cart}"},
                                                 {"timeout_ms", 300}, {"required", true}}}}}));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
    REQUIRE(r);
    CHECK(r->status == 200);
    const auto answer = json::parse(r->body);
    CHECK(answer["data"]["add"].is_null());
    CHECK(answer["sections"]["add"]["status"] == "ok");
  }
}

TEST_CASE("write: a refusal passes on as rejected, detail only with pass_errors", "[write]") {
  for (const int status : {400, 401, 403, 404, 409, 412, 422, 429}) {
    for (const bool pass : {true, false}) {
      cart_downstream down;
      down.write_answer = {status, R"({"code":"out_of_stock","left":0})", {}};
      running_gateway gw(add_route(down.server, {{"pass_errors", pass}}));
      const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
      REQUIRE(r);
      INFO("status " << status << " pass_errors " << pass);
      CHECK(r->status == status);
      const auto answer = json::parse(r->body);
      CHECK(answer["error"] == "rejected");
      CHECK(answer["section"] == "add");
      CHECK(answer["request_id"] == r->get_header_value("X-Request-Id"));
      if (pass)
        CHECK(answer["detail"] == json{{"code", "out_of_stock"}, {"left", 0}});
      else
        CHECK_FALSE(answer.contains("detail"));
      CHECK(down.server.requests().size() == 1); // the reads never ran
    }
  }
}

TEST_CASE("write: what is not a JSON object of 4 KiB is no detail, 5xx is 503, a timeout 504", "[write]") {
  cart_downstream down;
  SECTION("an array, a text, a big object: no detail") {
    for (const std::string& body : {std::string("[1]"), std::string("out of stock"),
                                    "{\"pad\":\"" + std::string(5000, 'x') + "\"}"}) {
      down.write_answer = {409, body, {}};
      running_gateway gw(add_route(down.server, {{"pass_errors", true}}));
      const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
      REQUIRE(r);
      CHECK(r->status == 409);
      CHECK_FALSE(json::parse(r->body).contains("detail"));
    }
  }
  SECTION("500 and 418 are 503 upstream_unavailable, never with detail") {
    for (const int status : {500, 418}) {
      down.write_answer = {status, R"({"secret":"stack trace"})", {}};
      running_gateway gw(add_route(down.server, {{"pass_errors", true}}));
      const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
      REQUIRE(r);
      CHECK(r->status == 503);
      CHECK(json::parse(r->body) == json{{"error", "upstream_unavailable"}, {"section", "add"},
                                         {"request_id", r->get_header_value("X-Request-Id")}});
    }
  }
  SECTION("a timeout is 504") {
    down.write_answer = {201, "{}", std::chrono::milliseconds(800)};
    running_gateway gw(add_route(down.server, {{"timeout_ms", 100}}));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
    REQUIRE(r);
    CHECK(r->status == 504);
    CHECK(json::parse(r->body)["error"] == "upstream_timeout");
  }
}

TEST_CASE("write: retried only when idempotent", "[write]") {
  int calls = 0;
  recording_server server{[&](const recorded_request& r) {
    if (r.method == "GET")
      return recorded_answer{200, "{}", {}};
    return ++calls == 1 ? recorded_answer{503, "{}", {}} : recorded_answer{201, "{\"cart_id\":\"c\"}", {}};
  }};
  SECTION("idempotent with retry: a second call") {
    running_gateway gw(add_route(server, {{"idempotent", true}, {"retry", {{"attempts", 2}, {"backoff_ms", 5}}}}));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})", {{"Idempotency-Key", "same"}});
    REQUIRE(r);
    CHECK(r->status == 201);
    const auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].header("idempotency-key") == "same");
    CHECK(seen[1].header("idempotency-key") == "same");
    CHECK(seen[1].body == seen[0].body);
  }
  SECTION("not idempotent: one call, its failure") {
    running_gateway gw(add_route(server));
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(server.requests().size() == 1);
  }
}

TEST_CASE("write: a 201 page with a read that fell back is degraded, and counted so", "[write]") {
  cart_downstream down;
  auto cfg = add_route(down.server);
  cfg["routes"][0]["sections"].push_back({{"name", "recs"}, {"url", down.server.base_url() + "/none/{body.sku}"},
                                          {"timeout_ms", 300}, {"fallback", json::array()}});
  running_gateway gw(cfg);
  const auto r = gw.post("/carts/1/items", R"({"sku":"x"})");
  REQUIRE(r);
  CHECK(r->status == 201);
  const auto answer = json::parse(r->body);
  CHECK(answer["degraded"] == true);
  CHECK(answer["warnings"] == json{"recs_error"});
  CHECK(answer["data"]["recs"] == json::array());
  const auto metrics = gw.get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("gather_degraded_total{route=\"/carts/{cart}/items\",section=\"recs\"} 1") !=
        std::string::npos);
  CHECK(metrics->body.find("gather_requests_total{route=\"/carts/{cart}/items\",code=\"201\"} 1") !=
        std::string::npos);
}
