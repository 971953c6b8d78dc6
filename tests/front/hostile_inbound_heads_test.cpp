// Hostile request heads: slowloris, oversized lines and headers, bad bytes in targets and values.
//
// Hostile inbound traffic against a real in-process gateway over raw sockets: what Gather's
// event-driven front does with slow, oversized and malformed clients. The limits behind these
// tests are in docs/security.md.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include "front/hostile_inbound_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::hostile_inbound_support;

namespace {

/// The connection's next answer is the JSON refusal `status`, or the gateway closes it.
void refused_or_closed(raw_connection& conn, int status) {
  if (auto r = conn.read_response()) {
    CHECK(r->status == status);
    check_json_response(*r);
  } else {
    CHECK(conn.wait_closed(milliseconds{3000}));
  }
}

/// A downstream that answers one request with {} and keeps the request head exactly as it came.
class capturing_downstream {
public:
  capturing_downstream() {
    fd_ = listen_on_loopback(16, port_);
    thread_ = std::thread([this] {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0)
        return;
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      char buf[4096];
      while (head_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(conn, buf, sizeof buf, 0);
        if (n <= 0)
          break;
        head_.append(buf, static_cast<std::size_t>(n));
      }
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
      (void)::send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(conn);
    });
  }
  ~capturing_downstream() {
    if (thread_.joinable())
      thread_.join();
    ::close(fd_);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// The request head received (call after the gateway answered).
  const std::string& head() {
    if (thread_.joinable())
      thread_.join();
    return head_;
  }

private:
  int fd_ = -1;
  int port_ = 0;
  std::string head_;
  std::thread thread_;
};

} // namespace

TEST_CASE("slowloris: a trickled request head is cut at request_timeout_ms, everyone else is served", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url(), {{"request_timeout_ms", 1500}})};
  raw_connection slow{gw.port()};

  // One byte every 100 ms, for up to 6 s: every read succeeds, so only a deadline for the whole
  // head (not one per read) can end it.
  const std::string head = "GET /p HTTP/1.1\r\nHost: gw\r\nX-Slow: ";
  std::atomic<bool> trickling{true};
  const auto first_byte = clock_type::now();
  std::thread trickler([&] {
    std::string bytes = head + std::string(64, 'a');
    for (std::size_t i = 0; i < 60 && trickling; ++i) {
      if (!slow.send(bytes.substr(i, 1)))
        break;
      std::this_thread::sleep_for(milliseconds{100});
    }
  });
  // Meanwhile other clients get their answers at once.
  for (int i = 0; i < 3; ++i)
    check_still_serving(gw);
  CHECK(slow.wait_closed(milliseconds{5000}));
  const auto cut_after = ms_since(first_byte);
  trickling = false;
  trickler.join();
  CHECK(cut_after >= 1400);
  CHECK(cut_after < 4000); // the trickle would have gone on for 6 s
  check_still_serving(gw);
}

TEST_CASE("a request line over 8 KiB gets 414 JSON with a fresh X-Request-Id", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  raw_connection conn{gw.port()};
  // A first request on the same keep-alive connection (so the same handler thread) with an id of
  // its own: the 414 must not reuse it.
  REQUIRE(conn.send(get_head("/p", "X-Request-Id: first-request-on-this-thread\r\n")));
  auto first = conn.read_response();
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->header("x-request-id") == "first-request-on-this-thread");

  REQUIRE(conn.send(get_head("/p?x=" + std::string(9000, 'a'))));
  auto r = conn.read_response();
  REQUIRE(r);
  CHECK(r->status == 414);
  check_json_response(*r);
  CHECK(json::parse(r->body)["error"] == "uri_too_long");
  CHECK(r->header("x-request-id") != "first-request-on-this-thread");
  // Counted (and logged) like any refusal, under no_route: its path was never read as one.
  CHECK(gw.get("/metrics")->body.find("gather_requests_total{route=\"no_route\",code=\"414\"} 1\n") !=
        std::string::npos);
  check_still_serving(gw);
}

TEST_CASE("a request line of 1 MiB is refused with 414 once it passes the limit, not read whole", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  raw_connection conn{gw.port()};
  // The gateway answers while the line is still arriving and stops reading: the send may fail.
  conn.send(get_head("/p?x=" + std::string(1 << 20, 'a')));
  if (auto r = conn.read_response(milliseconds{5000})) {
    CHECK(r->status == 414);
    check_json_response(*r);
  } else {
    CHECK(conn.wait_closed(milliseconds{3000}));
  }
  check_still_serving(gw);
}

TEST_CASE("a header block over max_header_bytes gets 431 or a close, one within it is served", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  const std::size_t size = GENERATE(17000u, 100000u, 1u << 20);
  INFO("header value of " << size << " bytes");
  raw_connection conn{gw.port()};
  conn.send(get_head("/p", "X-Big: " + std::string(size, 'h') + "\r\n"));
  if (auto r = conn.read_response()) {
    CHECK(r->status == 431);
    check_json_response(*r);
    CHECK(json::parse(r->body)["error"] == "headers_too_large");
  } else {
    CHECK(conn.wait_closed(milliseconds{3000}));
  }
  CHECK(down.server.calls() == 0);
  raw_connection fits{gw.port()};
  REQUIRE(fits.send(get_head("/p", "X-Big: " + std::string(15000, 'h') + "\r\n")));
  auto served = fits.read_response();
  REQUIRE(served);
  CHECK(served->status == 200);
  check_still_serving(gw);
}

TEST_CASE("ten thousand headers: 431 at max_headers, nothing forwarded", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url(), {{"max_header_bytes", 1048576}})};
  std::string headers;
  for (int i = 0; i < 10000; ++i)
    headers += "X-H" + std::to_string(i) + ": v\r\n";
  raw_connection conn{gw.port()};
  const auto start = clock_type::now();
  conn.send(get_head("/p", headers));
  auto r = conn.read_response(milliseconds{5000});
  REQUIRE(r);
  CHECK(r->status == 431);
  check_json_response(*r);
  CHECK(ms_since(start) < 3000);
  CHECK(down.server.calls() == 0);
  // Up to the limit (100 by default, the Host line included) is served.
  std::string hundred;
  for (int i = 0; i < 99; ++i)
    hundred += "X-H" + std::to_string(i) + ": v\r\n";
  raw_connection ok{gw.port()};
  REQUIRE(ok.send(get_head("/p", hundred)));
  auto served = ok.read_response();
  REQUIRE(served);
  CHECK(served->status == 200);
  check_still_serving(gw);
}

TEST_CASE("invalid UTF-8 and NUL bytes in the path and headers get clean JSON answers", "[hostile]") {
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  struct hostile_case {
    const char* what;
    std::string request;
  };
  const std::string nul(1, '\0');
  const std::vector<hostile_case> cases = {
      {"raw invalid UTF-8 in a capture", get_head("/items/\xff\xfe\xc0\xaf")},
      {"encoded invalid UTF-8 in a capture", get_head("/items/%FF%FE%C0%AF")},
      {"encoded NUL in a capture", get_head("/items/a%00b")},
      {"raw NUL in the path", get_head("/items/a" + nul + "b")},
      {"raw invalid UTF-8 on no route", get_head("/\xff/\x80")},
      {"invalid UTF-8 in a forwarded header", get_head("/items/1", "X-Tenant: \xff\xfe\r\n")},
      {"NUL in a forwarded header", get_head("/items/1", "X-Tenant: a" + nul + "b\r\n")},
      {"invalid UTF-8 in X-Request-Id", get_head("/p", "X-Request-Id: \xff\xfe\r\n")},
      {"NUL in a header name", get_head("/p", "X-A" + nul + "b: 1\r\n")},
      {"invalid UTF-8 in the query", get_head("/items/1?q=\xff%FF")},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    raw_connection conn{gw.port()};
    REQUIRE(conn.send(c.request));
    if (auto r = conn.read_response()) {
      check_json_response(*r);
      CHECK(r->status != 500);
      // An X-Request-Id that is not [A-Za-z0-9._-]{1,64} is replaced.
      CHECK(valid_utf8(r->header("x-request-id")));
    } else {
      CHECK(conn.wait_closed(milliseconds{6000})); // a clean close is a clean refusal too
    }
  }
  check_still_serving(gw);
}

TEST_CASE("CR or NUL inside a header value is refused with 400 and nothing reaches a downstream", "[hostile]") {
  const std::string value = GENERATE(as<std::string>{}, "a\rInjected: yes", "a" + std::string(1, '\0') + "b",
                                     "a\x01b", "a\x7f" "b");
  inbound_echo_downstream down;
  running_gateway gw{route_config_json(
      "/p", {section("s", down.server.base_url() + "/ok", 2000, {{"required", true}, {"forward_headers", {"x-tenant"}}})},
      3000)};
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(get_head("/p", "X-Tenant: " + value + "\r\n")));
  refused_or_closed(conn, 400);
  CHECK(down.server.calls() == 0);
  check_still_serving(gw);
}

TEST_CASE("a tab inside a forwarded header value arrives whole, on one line", "[hostile]") {
  capturing_downstream down;
  running_gateway gw{route_config_json(
      "/p", {section("s", down.base_url() + "/x", 2000, {{"required", true}, {"forward_headers", {"x-tenant"}}})},
      3000)};
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(get_head("/p", "X-Tenant: a\tb\r\n")));
  auto r = conn.read_response();
  REQUIRE(r);
  CHECK(r->status == 200);
  const std::string& head = down.head();
  INFO(head);
  CHECK(head.find("x-tenant: a\tb\r\n") != std::string::npos);
}

TEST_CASE("control bytes in the request target are refused with 400 and nothing reaches a downstream", "[hostile]") {
  const std::string target = GENERATE(as<std::string>{}, "/items/a\x01" "b", "/items/a\x7f" "b",
                                      "/items/a" + std::string(1, '\0') + "b", "/p?q=\x1f");
  inbound_echo_downstream down;
  running_gateway gw{hostile_config(down.server.base_url())};
  raw_connection conn{gw.port()};
  REQUIRE(conn.send(get_head(target)));
  refused_or_closed(conn, 400);
  CHECK(down.server.calls() == 0);
  check_still_serving(gw);
}
