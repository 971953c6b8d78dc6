// Hostile framing: pipelining, vanishing clients, smuggled requests, chunked and compressed bodies.
//
// Hostile inbound traffic against a real in-process gateway over raw sockets: what Gather's
// event-driven front does with pipelined, smuggling, oversized and vanishing clients. The limits
// behind these tests are in docs/security.md.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include "front/hostile_inbound_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::hostile_inbound_support;

TEST_CASE("pipelined requests are answered in the order they were sent", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  raw_connection conn{gw.port()};
  // Five requests in one segment, the third to /healthz (answered at once, without a
  // coordinator): the answers still come in the order of the requests.
  std::string all;
  for (int i = 0; i < 5; ++i)
    all += get_head(i == 2 ? "/healthz" : "/items/n" + std::to_string(i),
                       "X-Request-Id: pipelined-" + std::to_string(i) + "\r\n");
  REQUIRE(conn.send(all));
  for (int i = 0; i < 5; ++i) {
    INFO("answer " << i);
    auto r = conn.read_response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->header("x-request-id") == "pipelined-" + std::to_string(i));
    if (i != 2)
      CHECK(json::parse(r->body)["data"]["thing"]["id"] == "n" + std::to_string(i));
  }
  CHECK_FALSE(conn.closed_now()); // kept alive
  check_still_serving(gw);
}

TEST_CASE("a client that disconnects mid-request leaves nothing behind", "[hostile]") {
  silent_server hung;
  inbound_echo_downstream down;
  json cfg = hostile_config(down.server.base_url());
  cfg["routes"].push_back({{"path", "/hang"},
                           {"deadline_ms", 10000},
                           {"sections", {section("s", hung.base_url() + "/x", 10000, {{"fallback", 0}})}}});
  running_gateway gw{cfg};
  const auto debug_coordinators = [&gw] {
    auto r = gw.get("/debug/actors");
    return r && r->status == 200 ? json::parse(r->body)["coordinators"].get<int>() : -1;
  };

  SECTION("closing (FIN) or resetting (RST) while the request is in flight") {
    const bool rst = GENERATE(false, true);
    INFO((rst ? "RST" : "FIN"));
    raw_connection conn{gw.port()};
    REQUIRE(conn.send(get_head("/hang")));
    REQUIRE(eventually([&] { return hung.accepted() == 1; }));
    CHECK(debug_coordinators() == 1);
    const auto start = clock_type::now();
    if (rst)
      conn.reset();
    else
      conn.close();
    CHECK(eventually([&] { return hung.closed_by_peer() == 1; }, milliseconds{3000}));
    CHECK(ms_since(start) < 3000); // far before the 10 s timeout and deadline
    CHECK(eventually([&] { return debug_coordinators() == 0; }));
    CHECK(eventually([&] { return gw.gw().stats().workers.load() == 0; }));
  }
  SECTION("closing half-way through the request head or a declared body starts nothing") {
    {
      raw_connection head_only{gw.port()};
      REQUIRE(head_only.send("GET /hang HTTP/1.1\r\nHost: gw\r\nX-Par"));
    }
    {
      raw_connection body_half{gw.port()};
      REQUIRE(body_half.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                             "Content-Length: 1000\r\n\r\n{\"items\": [\"a\""));
    }
    std::this_thread::sleep_for(milliseconds{300});
    CHECK(hung.accepted() == 0);
    CHECK(down.server.calls() == 0);
    CHECK(debug_coordinators() == 0);
  }
  check_still_serving(gw);
}

TEST_CASE("a body on a GET is ignored and the connection closed: it never becomes a request", "[hostile]") {
  // A GET's body is never read; left on a kept-alive connection, its bytes would be parsed as the
  // next request (a body smuggling a request past a proxy that forwarded one).
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  const std::string smuggled = get_head("/debug/actors", "X-Request-Id: smuggled\r\n");
  const bool separate_segment = GENERATE(false, true);
  INFO((separate_segment ? "body in a later segment" : "body with the head"));
  raw_connection conn{gw.port()};
  const std::string head = "GET /p HTTP/1.1\r\nHost: gw\r\nX-Request-Id: carrier\r\nContent-Length: " +
                           std::to_string(smuggled.size()) + "\r\n\r\n";
  if (separate_segment) {
    REQUIRE(conn.send(head));
    std::this_thread::sleep_for(milliseconds{200});
    conn.send(smuggled);
  } else {
    REQUIRE(conn.send(head + smuggled));
  }
  auto r = conn.read_response();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->header("x-request-id") == "carrier");
  CHECK(r->header("connection") == "close");
  check_json_response(*r);
  CHECK_FALSE(conn.read_response(milliseconds{1500})); // no answer to the body
  CHECK(conn.wait_closed(milliseconds{1000}));
}

TEST_CASE("a Transfer-Encoding that does not end in chunked is a 400 and a close, never two requests", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  const std::string coding = GENERATE(as<std::string>{}, "gzip", "xchunked", "identity", "chunked, gzip");
  INFO("Transfer-Encoding: " << coding);
  raw_connection conn{gw.port()};
  REQUIRE(conn.send("GET /p HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: " + coding + "\r\n\r\n" +
                    get_head("/debug/actors", "X-Request-Id: smuggled\r\n")));
  if (auto r = conn.read_response()) {
    CHECK(r->status == 400);
    check_json_response(*r);
    CHECK(r->header("x-request-id") != "smuggled");
  }
  CHECK_FALSE(conn.read_response(milliseconds{500})); // the smuggled request is never answered
  CHECK(conn.wait_closed(milliseconds{2000}));
  CHECK(down.server.calls() == 0);
}

TEST_CASE("a chunked body over max_body_bytes gets 413 JSON with X-Request-Id", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url(), {{"max_body_bytes", 100}})};
  raw_connection conn{gw.port()};
  std::string request = "POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                        "X-Request-Id: chunky\r\nTransfer-Encoding: chunked\r\n\r\n";
  // A valid batch body padded to 320 bytes: only its size is wrong.
  const std::string body = R"({"items": [1]})" + std::string(306, ' ');
  for (std::size_t at = 0; at < body.size(); at += 32)
    request += "20\r\n" + body.substr(at, 32) + "\r\n";
  request += "0\r\n\r\n";
  REQUIRE(conn.send(request));
  auto r = conn.read_response();
  REQUIRE(r);
  CHECK(r->status == 413);
  check_json_response(*r);
  CHECK(json::parse(r->body)["error"] == "payload_too_large");
  CHECK(r->header("x-request-id") == "chunky");
  CHECK(r->header("connection") == "close");
  CHECK(conn.wait_closed(milliseconds{1000}));

  SECTION("a chunked body within the limit is served") {
    raw_connection ok{gw.port()};
    REQUIRE(ok.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n6\r\n{\"item\r\n8\r\ns\": [7]}\r\n0\r\n\r\n"));
    auto served = ok.read_response();
    REQUIRE(served);
    CHECK(served->status == 200);
    check_json_response(*served);
  }
  SECTION("an endless chunked body is cut at the limit, not read on") {
    raw_connection endless{gw.port()};
    REQUIRE(endless.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n"));
    std::optional<raw_response> refused;
    std::size_t sent = 0;
    for (int i = 0; i < 1000 && !refused; ++i) { // at most 64 MB
      if (!endless.send("10000\r\n" + std::string(65536, ' ') + "\r\n"))
        break;
      sent += 65536;
      refused = endless.read_response(milliseconds{1});
    }
    if (!refused)
      refused = endless.read_response();
    REQUIRE(refused);
    CHECK(refused->status == 413);
    CHECK(sent < 16u * 1024 * 1024); // the gateway stopped reading long before
  }
  SECTION("a malformed chunked body is a 400 and a close") {
    raw_connection bad{gw.port()};
    REQUIRE(bad.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"));
    auto refused = bad.read_response();
    REQUIRE(refused);
    CHECK(refused->status == 400);
    check_json_response(*refused);
    CHECK(bad.wait_closed(milliseconds{1000}));
  }
  SECTION("a declared Content-Length over the limit is refused before the body is sent") {
    raw_connection big{gw.port()};
    REQUIRE(big.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                     "Content-Length: 1000000000\r\n\r\n"));
    auto refused = big.read_response();
    REQUIRE(refused);
    CHECK(refused->status == 413);
    CHECK(refused->header("connection") == "close");
    check_json_response(*refused);
  }
}

TEST_CASE("a compressed request body is refused unread with 415", "[hostile]") {
  // An inflated body has no bound: max_body_bytes counts the bytes sent (docs/security.md).
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  const std::string encoding = GENERATE(as<std::string>{}, "gzip", "br", "deflate");
  INFO(encoding);
  raw_connection conn{gw.port()};
  const std::string body(64, 'z'); // never inflated, so it need not even be valid
  REQUIRE(conn.send("POST /orders HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                    "Content-Encoding: " + encoding + "\r\nX-Request-Id: squeezed\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body));
  auto r = conn.read_response();
  REQUIRE(r);
  CHECK(r->status == 415);
  CHECK(r->header("connection") == "close");
  CHECK(r->header("x-request-id") == "squeezed");
  check_json_response(*r);
  CHECK(json::parse(r->body)["error"] == "unsupported_media_type");
  CHECK(down.server.calls() == 0);
}
