// gRPC writes end to end (docs/grpc.md#writes, docs/api.md#write-routes): a real gateway calling
// a real grpcio cart service (tests/support/grpc_cart_server.py), which reports every call.
#include <catch2/catch.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/grpc_library.hpp"
#include "support/token_maker.hpp"

using json = nlohmann::json;
using gather::test::grpc_library;
using gather::test::running_gateway;

namespace {

grpc_library cart_server() { return grpc_library("grpc_cart_server.py", GATHER_TEST_CART_DESCRIPTOR_SET); }

json cart_config(const grpc_library& server, json message, json write_extra = json::object(),
                 json route_extra = json::object()) {
  json write = {{"name", "add"}, {"timeout_ms", 500},
                {"grpc", {{"target", server.target()}, {"method", "shop.v1.Cart/AddItem"}, {"message", message}}}};
  for (auto& [k, v] : write_extra.items())
    write[k] = v;
  json read = {{"name", "cart"}, {"timeout_ms", 300}, {"required", true},
               {"grpc", {{"target", server.target()}, {"method", "shop.v1.Cart/GetCart"},
                         {"message", {{"cart_id", "{add.cart_id}"}}}}}};
  json route = {{"path", "/carts/{cart}/items"}, {"method", "POST"}, {"deadline_ms", 1500},
                {"write", write}, {"sections", {read}}};
  for (auto& [k, v] : route_extra.items())
    route[k] = v;
  return {{"listen", "127.0.0.1:0"}, {"max_inflight", 64}, {"routes", {route}},
          {"protos", {{"descriptor_sets", {GATHER_TEST_CART_DESCRIPTOR_SET}}}}};
}

const json add_message = {{"cart_id", "{cart}"}, {"sku", "{body.sku}"}, {"quantity", "{body.quantity}"}};

} // namespace

TEST_CASE("grpc write: the body into the message with its types, then the read", "[grpc-write]") {
  auto server = cart_server();
  running_gateway gw(cart_config(server, add_message));
  const auto r = gw.post("/carts/c1/items", R"({"sku": "b-1", "quantity": 2})", {{"Idempotency-Key", "k-9"}});
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto answer = json::parse(r->body);
  CHECK(answer["data"]["add"] == json{{"cart_id", "c1"}, {"lines", {{{"sku", "b-1"}, {"quantity", 2}}}}, {"count", 2}});
  CHECK(answer["data"]["cart"]["count"] == 2);
  const auto add = server.event("\"AddItem\"");
  CHECK(add["request"] == json{{"cart_id", "c1"}, {"sku", "b-1"}, {"quantity", 2}});
  CHECK(add["metadata"]["idempotency-key"] == "k-9");
  CHECK(server.event("\"done\"")["cart"]["count"] == 2); // the write completed before the read
  const auto get = server.event("\"GetCart\"");
  CHECK(get["request"] == json{{"cart_id", "c1"}});
  CHECK_FALSE(get["metadata"].contains("idempotency-key")); // the write's alone
}

TEST_CASE("grpc write: \"{body}\" is the whole message, an absent field is left out", "[grpc-write]") {
  auto server = cart_server();
  running_gateway gw(cart_config(server, "{body}"));
  const auto r = gw.post("/carts/c1/items", R"({"cart_id": "c2", "sku": "b-2", "gift": {"note": "hi"}})");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(server.event("\"AddItem\"")["request"] ==
        json{{"cart_id", "c2"}, {"sku", "b-2"}, {"gift", {{"note", "hi"}}}});
  const auto lacking = gw.post("/carts/c3/items", R"({"sku": "b-3"})");
  REQUIRE(lacking);
  CHECK(lacking->status == 200);
}

TEST_CASE("grpc write: a body the message cannot hold is 400 naming the field, no call made", "[grpc-write]") {
  auto server = cart_server();
  running_gateway gw(cart_config(server, add_message));
  for (const std::string& body : {std::string(R"({"sku": "b", "quantity": 3000000000})"),
                                  std::string(R"({"sku": "b", "quantity": "many"})"),
                                  std::string(R"({"sku": "b", "quantity": 1.5})"),
                                  std::string(R"({"sku": "b", "quantity": [1]})")}) {
    INFO(body);
    const auto r = gw.post("/carts/c1/items", body);
    REQUIRE(r);
    CHECK(r->status == 400);
    const auto answer = json::parse(r->body);
    CHECK(answer["error"] == "bad_request");
    CHECK(answer["section"] == "add");
    const auto message = answer["message"].get<std::string>();
    CHECK(message.find("body.quantity") != std::string::npos);
    CHECK(message.find("127.0.0.1") == std::string::npos);
  }
  auto whole = cart_server();
  running_gateway gw2(cart_config(whole, "{body}"));
  const auto r = gw2.post("/carts/c1/items", R"({"sku": "b", "colour": "red"})");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(json::parse(r->body)["message"].get<std::string>().find("body.colour") != std::string::npos);
  // Nothing reached either server: a good call is the first each sees.
  REQUIRE(gw.post("/carts/c1/items", R"({"sku": "ok", "quantity": 1})")->status == 200);
  CHECK(server.event("\"AddItem\"")["request"]["sku"] == "ok");
}

TEST_CASE("grpc write: every code of the table, detail only with pass_errors", "[grpc-write]") {
  auto server = cart_server();
  running_gateway passing(cart_config(server, add_message, {{"pass_errors", true}}));
  running_gateway quiet(cart_config(server, add_message));
  const std::vector<std::pair<int, int>> table = {
    {3, 400}, {11, 400}, {9, 400}, {16, 401}, {7, 403}, {5, 404}, {6, 409}, {10, 409}, {8, 429}};
  for (const auto& [code, status] : table) {
    INFO("grpc code " << code);
    const std::string body = R"({"sku": "code-)" + std::to_string(code) + R"(", "quantity": 1})";
    const auto r = passing.post("/carts/c1/items", body);
    REQUIRE(r);
    CHECK(r->status == status);
    const auto answer = json::parse(r->body);
    CHECK(answer["error"] == "rejected");
    CHECK(answer["section"] == "add");
    CHECK(answer["detail"] == json{{"message", "refused with " + std::to_string(code)}});
    const auto plain = quiet.post("/carts/c1/items", body);
    REQUIRE(plain);
    CHECK(plain->status == status);
    CHECK_FALSE(json::parse(plain->body).contains("detail"));
  }
  const std::vector<std::pair<int, std::pair<int, std::string>>> others = {
    {12, {501, "not_implemented"}}, {4, {504, "upstream_timeout"}}, {14, {503, "upstream_unavailable"}},
    {13, {503, "upstream_unavailable"}}, {2, {503, "upstream_unavailable"}}};
  for (const auto& [code, expected] : others) {
    INFO("grpc code " << code);
    const auto r = passing.post("/carts/c1/items", R"({"sku": "code-)" + std::to_string(code) + R"(", "quantity": 1})");
    REQUIRE(r);
    CHECK(r->status == expected.first);
    const auto answer = json::parse(r->body);
    CHECK(answer["error"] == expected.second);
    CHECK_FALSE(answer.contains("detail")); // no other error carries it
  }
}

TEST_CASE("grpc write: its own timeout is 504, the write is never sent twice", "[grpc-write]") {
  auto server = cart_server();
  running_gateway gw(cart_config(server, add_message, {{"timeout_ms", 100}}));
  const auto r = gw.post("/carts/c1/items", R"({"sku": "slow-400", "quantity": 1})");
  REQUIRE(r);
  CHECK(r->status == 504);
  CHECK(json::parse(r->body)["error"] == "upstream_timeout");
  CHECK(server.event("\"AddItem\"")["timeout"].get<double>() <= 0.1);
}

TEST_CASE("grpc write: {claim.sub} in the message, under auth", "[grpc-write]") {
  using namespace gather::test;
  signing_key key(key_kind::ec_p256, "k1");
  const auto jwks = temp_file(jwk_set_of({&key}).dump());
  auto server = cart_server();
  json message = add_message;
  message["user"] = "{claim.sub}";
  running_gateway gw(cart_config(server, message, json::object(), {{"auth", {{"jwt", {{"jwks_file", jwks}}}}}}));
  const auto token = key.sign(claims_now({{"sub", "user-7"}}), "ES256");
  const auto r = gw.post("/carts/c1/items", R"({"sku": "b", "quantity": 1})", {{"Authorization", "Bearer " + token}});
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(server.event("\"AddItem\"")["request"]["user"] == "user-7");
  const auto anonymous = gw.post("/carts/c1/items", R"({"sku": "b", "quantity": 1})");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
}
