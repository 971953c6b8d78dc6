// What a write route takes: methods, hostile and big bodies, streams, gone clients, CORS, HTTP/2.
//
// Write routes over HTTP end to end (docs/api.md#write-routes): a real gateway, a downstream that
// records every request byte for byte (tests/support/recording_server), real clients.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/recording_server.hpp"
#include "actors/write_route_test_support.hpp"

using json = nlohmann::json;
using gather::test::raw_connection;
using gather::test::recorded_answer;
using gather::test::recorded_request;
using gather::test::recording_server;
using gather::test::running_gateway;
using namespace gather::test::write_route_support;

namespace {

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
