// Write routes over HTTP end to end (docs/api.md#write-routes): a real gateway, a downstream that
// records every request byte for byte (tests/support/recording_server), real clients.
#include <catch2/catch.hpp>

#include <thread>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/recording_server.hpp"

using json = nlohmann::json;
using gather::test::raw_connection;
using gather::test::recorded_answer;
using gather::test::recorded_request;
using gather::test::recording_server;
using gather::test::running_gateway;

namespace {

/// A cart service: POST .../items answers `write_answer` (201 with the cart's id by default),
/// GET /carts/ID the cart, anything else 404.
struct cart_downstream {
  recorded_answer write_answer{201, R"({"cart_id":"c7","count":3})", {}};
  recording_server server{[this](const recorded_request& r) {
    if (r.method != "GET")
      return write_answer;
    if (r.target.rfind("/carts/", 0) == 0)
      return recorded_answer{200, R"({"lines":[{"sku":"b-1","quantity":3}]})", {}};
    return recorded_answer{404, "{}", {}};
  }};
};

json add_route(const recording_server& server, json write_extra = json::object(), json route_extra = json::object(),
               bool with_reads = true) {
  json write = {{"name", "add"}, {"url", server.base_url() + "/carts/{cart}/items"}, {"timeout_ms", 500},
                {"forward_headers", {"x-tenant"}}};
  for (auto& [k, v] : write_extra.items())
    write[k] = v;
  json route = {{"path", "/carts/{cart}/items"}, {"method", "POST"}, {"deadline_ms", 1500}, {"write", write}};
  if (with_reads)
    route["sections"] = {{{"name", "cart"}, {"url", server.base_url() + "/carts/{add.cart_id}?sku={body.sku}"},
                          {"timeout_ms", 300}, {"required", true},
                          {"forward_headers", {"x-tenant", "idempotency-key"}}}};
  for (auto& [k, v] : route_extra.items())
    route[k] = v;
  return {{"listen", "127.0.0.1:0"}, {"max_inflight", 64}, {"max_body_bytes", 4096}, {"routes", {route}}};
}

/// A request as the client writes it: method, target, extra header lines (each CRLF-ended), body.
std::string request_bytes(const std::string& method, const std::string& target, const std::string& headers,
                          const std::string& body) {
  return method + " " + target + " HTTP/1.1\r\nHost: gw\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

gather::test::raw_response send_raw(int port, const std::string& bytes) {
  raw_connection c(port);
  REQUIRE(c.send(bytes));
  auto r = c.read_response();
  REQUIRE(r);
  return *r;
}

/// One HTTP/2 request (h2c) with python3-h2 (tests/front/h2_client.py "ask"): status and body.
std::pair<int, json> h2_write(int port, const std::string& headers, const std::string& body) {
  const auto r = gather::test::run("/usr/bin/python3", {GATHER_SOURCE_DIR "/tests/front/h2_client.py", "ask",
                                                       std::to_string(port), "POST", "/carts/5/items", headers, body});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  auto out = r.out;
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  const auto answer = json::parse(out.substr(out.rfind('\n') + 1));
  std::string text;
  for (const auto& frame : answer["frames"]) {
    const auto hex = frame["hex"].get<std::string>();
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return {answer["status"].get<int>(), text.empty() ? json() : json::parse(text)};
}

/// Waits (bounded) until `ready` holds.
template <class Ready> bool eventually(Ready ready, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

} // namespace

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

TEST_CASE("write: routes share a path by method, 405 lists them, HEAD is 405", "[write]") {
  cart_downstream down;
  auto cfg = add_route(down.server);
  cfg["routes"].push_back({{"path", "/carts/{cart}/items"},
                           {"sections", {{{"name", "cart"}, {"url", down.server.base_url() + "/carts/{cart}"},
                                          {"timeout_ms", 300}, {"required", true}}}}});
  running_gateway gw(cfg);
  auto get = gw.get("/carts/9/items");
  REQUIRE(get);
  CHECK(get->status == 200);
  CHECK(down.server.requests().back().target == "/carts/9");
  for (const std::string method : {"PUT", "PATCH", "DELETE"}) {
    const auto r = send_raw(gw.port(), request_bytes(method, "/carts/9/items", "", ""));
    CHECK(r.status == 405);
    CHECK(r.header("allow") == "POST, GET");
  }
  auto head = gw.client().Head("/carts/9/items");
  REQUIRE(head);
  CHECK(head->status == 405);
  CHECK(head->get_header_value("Allow") == "POST, GET");
  const auto post = gw.post("/carts/9/items", R"({"sku":"x"})");
  REQUIRE(post);
  CHECK(post->status == 201);
}

TEST_CASE("write: hostile bodies are a clear 400, 413 or 415, nothing reaches a downstream", "[write]") {
  cart_downstream down;
  running_gateway gw(add_route(down.server));
  const std::string json_type = "Content-Type: application/json\r\n";
  struct refused {
    std::string headers, body;
    int status;
    std::string message;
  };
  const std::string deep = "{\"a\":" + std::string(2000, '[') + std::string(2000, ']') + "}";
  const std::vector<refused> cases = {
    {"", R"({"sku":"x"})", 415, "the body must be sent as Content-Type: application/json"},
    {"Content-Type: text/plain\r\n", R"({"sku":"x"})", 415, "the body must be sent as Content-Type: application/json"},
    {json_type, "", 400, "this route needs a JSON body"},
    {json_type, "[1,2]", 400, "the body must be a JSON object, not an array"},
    {json_type, "\"sku\"", 400, "the body must be a JSON object, not a string"},
    {json_type, R"({"sku":"a","sku":"b"})", 400, "the body has the key \"sku\" twice in one object"},
    {json_type, deep, 400, "the body is nested deeper than 512 levels"},
    {json_type, "{\"sku\":\"\xff\xfe\"}", 400, ""},
    {json_type, "{\"sku\":", 400, ""},
    {json_type, "{\"sku\":\"" + std::string(5000, 'x') + "\"}", 413, ""},
  };
  for (const auto& c : cases) {
    INFO(c.headers << c.body.substr(0, 40));
    const auto r = send_raw(gw.port(), request_bytes("POST", "/carts/1/items", c.headers, c.body));
    CHECK(r.status == c.status);
    const auto answer = json::parse(r.body);
    if (!c.message.empty())
      CHECK(answer["message"] == c.message);
    if (c.status == 400)
      CHECK(answer["error"] == "bad_request");
    CHECK(r.header("x-request-id") == answer["request_id"]);
  }
  CHECK(down.server.requests().empty());
  // The gateway keeps serving, and a DELETE route may come without a body.
  const auto ok = gw.post("/carts/1/items", R"({"sku":"x"})");
  REQUIRE(ok);
  CHECK(ok->status == 201);
}

TEST_CASE("write: a DELETE without a body, {body.x} then renders empty", "[write]") {
  cart_downstream down;
  down.write_answer = {204, "", {}};
  running_gateway gw(add_route(down.server, {{"url", down.server.base_url() + "/carts/{cart}/items?sku={body.sku}"}},
                               {{"method", "DELETE"}}, false));
  const auto r = send_raw(gw.port(), request_bytes("DELETE", "/carts/3/items", "", ""));
  CHECK(r.status == 204);
  const auto seen = down.server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "DELETE");
  CHECK(seen[0].target == "/carts/3/items?sku=");
  CHECK(seen[0].body.empty());
  CHECK(seen[0].count("content-type") == 0);
}

TEST_CASE("write: answered whole when a stream is asked for", "[write]") {
  cart_downstream down;
  running_gateway gw(add_route(down.server));
  for (const std::string accept : {"application/x-ndjson", "text/event-stream"}) {
    const auto r = gw.post("/carts/1/items", R"({"sku":"x"})", {{"Accept", accept}});
    REQUIRE(r);
    CHECK(r->status == 201);
    CHECK(r->get_header_value("Content-Type") == "application/json");
    CHECK(json::parse(r->body)["data"]["add"]["cart_id"] == "c7");
  }
}

TEST_CASE("write: the client going away does not cancel a write once sent, a read's call is", "[write]") {
  cart_downstream down;
  down.write_answer = {201, R"({"cart_id":"c7"})", std::chrono::milliseconds(300)};
  running_gateway gw(add_route(down.server));
  {
    raw_connection c(gw.port());
    REQUIRE(c.send(request_bytes("POST", "/carts/1/items", "Content-Type: application/json\r\n", R"({"sku":"x"})")));
    REQUIRE(eventually([&] { return down.server.requests().size() == 1; }));
    c.reset(); // gone while the write is in flight
  }
  REQUIRE(eventually([&] { return down.server.completed() == 1; }));
  CHECK(down.server.abandoned() == 0);
  CHECK(down.server.requests().size() == 1); // its reads are not made for nobody

  // The same on a read route: its call is cancelled when the client goes.
  recording_server slow{[](const recorded_request&) { return recorded_answer{200, "{}", std::chrono::milliseconds(300)}; }};
  auto read_cfg = add_route(slow);
  read_cfg["routes"][0] = {{"path", "/slow"}, {"sections", {{{"name", "s"}, {"url", slow.base_url() + "/slow"},
                                                             {"timeout_ms", 1000}, {"required", true}}}}};
  running_gateway reads(read_cfg);
  {
    raw_connection c(reads.port());
    REQUIRE(c.send(gather::test::get_head("/slow")));
    REQUIRE(eventually([&] { return slow.requests().size() == 1; }));
    c.reset();
  }
  REQUIRE(eventually([&] { return slow.abandoned() == 1; })); // a read's call is cancelled
  CHECK(slow.completed() == 0);
  // Both gateways keep serving.
  down.write_answer = {201, R"({"cart_id":"c7"})", {}};
  const auto again = gw.post("/carts/1/items", R"({"sku":"x"})");
  REQUIRE(again);
  CHECK(again->status == 201);
}

TEST_CASE("write: a CORS preflight allows the path's methods", "[write]") {
  cart_downstream down;
  auto cfg = add_route(down.server);
  cfg["routes"].push_back({{"path", "/carts/{cart}/items"}, {"method", "DELETE"},
                           {"write", {{"name", "drop"}, {"url", down.server.base_url() + "/x"}, {"timeout_ms", 100}}}});
  cfg["cors"] = {{"allow_origins", {"https://shop.example.com"}}, {"allow_headers", {"content-type", "idempotency-key"}}};
  running_gateway gw(cfg);
  const auto ok = send_raw(gw.port(), request_bytes("OPTIONS", "/carts/1/items",
                                                    "Origin: https://shop.example.com\r\n"
                                                    "Access-Control-Request-Method: DELETE\r\n"
                                                    "Access-Control-Request-Headers: content-type, idempotency-key\r\n",
                                                    ""));
  CHECK(ok.status == 204);
  CHECK(ok.header("access-control-allow-methods") == "POST, DELETE");
  CHECK(ok.header("access-control-allow-headers") == "content-type, idempotency-key");
  const auto refused = send_raw(gw.port(), request_bytes("OPTIONS", "/carts/1/items",
                                                         "Origin: https://shop.example.com\r\n"
                                                         "Access-Control-Request-Method: PUT\r\n", ""));
  CHECK(refused.status == 403);
  CHECK(down.server.requests().empty());
}

TEST_CASE("write: a 1 MiB string goes through byte for byte when max_body_bytes allows it, 413 when not",
          "[write]") {
  cart_downstream down;
  auto cfg = add_route(down.server, json::object(), json::object(), false);
  cfg["max_body_bytes"] = 2 * 1024 * 1024;
  cfg["max_response_bytes"] = 1024 * 1024;
  running_gateway gw(cfg);
  const std::string body = "{\"note\":\"" + std::string(1024 * 1024, 'n') + "\",\"sku\":\"x\"}";
  const auto r = gw.post("/carts/1/items", body);
  REQUIRE(r);
  CHECK(r->status == 201);
  REQUIRE(down.server.requests().size() == 1);
  CHECK(down.server.requests()[0].body == body);
  cfg["max_body_bytes"] = 1024 * 1024; // the default: the same body is over it
  running_gateway strict(cfg);
  raw_connection c(strict.port()); // refused on its head: the body is never sent
  REQUIRE(c.send("POST /carts/1/items HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  const auto refused = c.read_response();
  REQUIRE(refused);
  CHECK(refused->status == 413);
  CHECK(down.server.requests().size() == 1);
}

TEST_CASE("write: over HTTP/2, the body in DATA frames (no Content-Length) is checked and passed on", "[write][h2]") {
  cart_downstream down;
  running_gateway gw(add_route(down.server));
  const std::string body = R"({"sku": "h2-1",  "quantity": 1})";
  const auto [status, answer] = h2_write(gw.port(), R"({"content-type": "application/json"})", body);
  CHECK(status == 201);
  CHECK(answer["data"]["add"]["cart_id"] == "c7");
  REQUIRE(down.server.requests().size() == 2);
  CHECK(down.server.requests()[0].body == body);
  const auto [refused, why] = h2_write(gw.port(), R"({"content-type": "text/plain"})", body);
  CHECK(refused == 415);
  CHECK(why["error"] == "unsupported_media_type");
  const auto [bad, reason] = h2_write(gw.port(), R"({"content-type": "application/json"})", "[1]");
  CHECK(bad == 400);
  CHECK(reason["message"] == "the body must be a JSON object, not an array");
  CHECK(down.server.requests().size() == 2);
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
