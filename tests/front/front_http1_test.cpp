// HTTP/1.0 framing (closed, or kept alive on request) and Expect: 100-continue.
//
// The event-driven front (include/gather/front/) against real gateways over real loopback
// sockets: HTTP/1.0 framing, the keep-alive idle timeout, Expect: 100-continue, inbound TLS,
// max_connections, a burst of 1,000 connections on a fresh process, 10,000 idle connections, and
// the config keys behind it all. Timing margins hold on a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "front/front_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::front_support;

namespace {

/// A POST head (no body) with Content-Length `length` and Expect: 100-continue.
std::string expect_head(const std::string& target, std::size_t length) {
  return "POST " + target + " HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(length) + "\r\nExpect: 100-continue\r\n\r\n";
}

/// Checks a refusal is the contract's JSON error with the right status and code.
void check_refusal(const raw_response& r, int status, const std::string& code) {
  INFO("status " << r.status << " body " << r.body);
  CHECK(r.status == status);
  CHECK(r.header("content-type").rfind("application/json", 0) == 0);
  const auto body = json::parse(r.body, nullptr, false);
  REQUIRE_FALSE(body.is_discarded());
  CHECK(body.value("error", "") == code);
  CHECK(body.value("request_id", "") == r.header("x-request-id"));
}

} // namespace

// ---- 1. HTTP/1.0 --------------------------------------------------------------------------------

TEST_CASE("HTTP/1.0 without a Connection header: one answer in HTTP/1.0 and then the connection closes", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url())};
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(get_head("/p", "", "HTTP/1.0")));
  bool closed = false;
  const std::string bytes = read_until_closed(conn.fd(), milliseconds{5000}, closed);
  INFO(bytes);
  CHECK(closed);
  CHECK(bytes.rfind("HTTP/1.0 200 ", 0) == 0);
  CHECK(bytes.find("\r\nConnection: close\r\n") != std::string::npos);
  const auto body_at = bytes.find("\r\n\r\n");
  REQUIRE(body_at != std::string::npos);
  CHECK(json::parse(bytes.substr(body_at + 4))["data"]["s"] == json{{"ok", 1}});
}

TEST_CASE("HTTP/1.0 with Connection: keep-alive is kept alive and says so", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url())};
  raw_connection conn{gw.port()};
  for (int i = 0; i < 2; ++i) {
    REQUIRE(conn.send(get_head("/p", "Connection: keep-alive\r\n", "HTTP/1.0")));
    auto r = conn.read_response();
    REQUIRE(r);
    check_p_answer(*r);
    CHECK(r->header("connection") == "keep-alive");
  }
  CHECK_FALSE(conn.closed_now());
  // Without the header again: answered, then closed.
  REQUIRE(conn.send(get_head("/p", "", "HTTP/1.0")));
  auto last = conn.read_response();
  REQUIRE(last);
  check_p_answer(*last);
  CHECK(last->header("connection") == "close");
  CHECK(conn.wait_closed(milliseconds{3000}));
}

// ---- 3. Expect: 100-continue -----------------------------------------------------------------------

TEST_CASE("Expect: 100-continue on a batch POST: 100 Continue first, then the answer to the body", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url(), {{"max_body_bytes", 1000}})};
  const std::string body = R"({"items": ["a", 7]})";
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(expect_head("/orders", body.size())));
  // The head alone earns the interim answer: the body has not been sent.
  auto interim = conn.read_response(milliseconds{5000});
  REQUIRE(interim);
  CHECK(interim->status == 100);
  CHECK(interim->body.empty());
  CHECK(down.server.calls() == 0);
  REQUIRE(conn.send(body));
  auto r = conn.read_response();
  REQUIRE(r);
  INFO("body " << r->body);
  CHECK(r->status == 200);
  const auto answer = json::parse(r->body);
  REQUIRE(answer["results"].size() == 2);
  CHECK(answer["results"][0]["item"] == "a");
  CHECK(answer["results"][0]["data"]["id"] == "a");
  CHECK(answer["results"][1]["data"]["id"] == "7");
  CHECK(answer["counts"]["ok"] == 2);
  // The connection is kept: a next request on it is answered.
  REQUIRE(conn.send(get_head("/p")));
  auto next = conn.read_response();
  REQUIRE(next);
  check_p_answer(*next);
}

TEST_CASE("Expect: 100-continue that the head already refuses gets the refusal at once and no 100", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url(), {{"max_body_bytes", 1000}})};
  struct refusal_case {
    std::string target;
    std::size_t length;
    int status;
    std::string code;
  };
  const auto c = GENERATE(values<refusal_case>({{"/nowhere", 20, 404, "no_route"},
                                                {"/p", 20, 405, "method_not_allowed"},
                                                {"/orders", 5000, 413, "payload_too_large"}}));
  INFO("POST " << c.target << " Content-Length " << c.length);
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(expect_head(c.target, c.length)));
  // The body is never sent: the answer comes on the head alone, and it is the first response.
  auto r = conn.read_response(milliseconds{5000});
  REQUIRE(r);
  check_refusal(*r, c.status, c.code);
  if (c.status == 405)
    CHECK(r->header("allow") == "GET");
  // The unread body cannot become a next request: the connection ends, nothing more is sent.
  bool closed = false;
  const std::string more = read_until_closed(conn.fd(), milliseconds{3000}, closed);
  CHECK(closed);
  CHECK(more.empty());
  CHECK(down.server.calls() == 0);
}
