// Hostile inbound traffic against a real in-process gateway over raw sockets: what Gather's
// event-driven front does with slow, oversized, malformed, pipelined, smuggling and vanishing
// clients. The limits behind these tests are in docs/security.md.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {


/// A downstream answering {"id": <capture>} on /items/<capture> and {"ok": 1} on /ok.
struct inbound_echo_downstream {
  test_server server;
  inbound_echo_downstream() {
    server.get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    server.get("/items/(.*)", [](const httplib::Request& req, httplib::Response& res) {
      json body = {{"id", req.matches[1].str()}, {"tenant", req.get_header_value("X-Tenant")}};
      res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    });
    server.start();
  }
};

/// /p (one required section), /items/{id} (a capture and a forwarded header), /orders (batch).
json hostile_config(const std::string& base, json top = json::object()) {
  json cfg = route_config_json("/p", {section("s", base + "/ok", 2000, {{"required", true}})}, 3000,
                               std::move(top));
  cfg["routes"].push_back(
      {{"path", "/items/{id}"},
       {"sections", {section("thing", base + "/items/{id}?t={header.x-tenant}", 2000,
                             {{"required", true}, {"forward_headers", {"x-tenant"}}})}}});
  cfg["routes"].push_back(
      {{"path", "/orders"}, {"batch", {{"url", base + "/items/{item}"}, {"timeout_ms", 2000}}}});
  return cfg;
}

/// Checks a response is the contract's JSON error (or any JSON), valid UTF-8, with X-Request-Id.
void check_json_response(const raw_response& r) {
  INFO("status " << r.status << " body " << r.body);
  CHECK(r.header("content-type").rfind("application/json", 0) == 0);
  CHECK(valid_utf8(r.body));
  CHECK_NOTHROW(json::parse(r.body));
  CHECK_FALSE(r.header("x-request-id").empty());
  if (r.status >= 400) {
    const auto body = json::parse(r.body, nullptr, false);
    CHECK(body.contains("error"));
    CHECK(body.value("request_id", "") == r.header("x-request-id"));
  }
}

/// The connection's next answer is the JSON refusal `status`, or the gateway closes it.
void refused_or_closed(raw_connection& conn, int status) {
  if (auto r = conn.read_response()) {
    CHECK(r->status == status);
    check_json_response(*r);
  } else {
    CHECK(conn.wait_closed(milliseconds{3000}));
  }
}

/// The gateway still answers an ordinary request, quickly.
void check_still_serving(running_gateway& gw) {
  const auto start = clock_type::now();
  auto r = gw.get("/p");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(ms_since(start) < 1000);
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
