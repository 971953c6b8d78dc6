// What comes back: statuses and bodies, connect errors, timeouts, slow_after, caps and redirects.
//
// The downstream client against real servers on loopback, and what it read classified by both of
// the body's validators. Time limits are generous on purpose (a loaded 2-core machine): they
// separate "bounded by the timeout" from "waited for the server".
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gather/downstream/call/downstream_client.hpp"
#include "support/ports.hpp"
#include "support/test_server.hpp"
#include "downstream/call/downstream_client_test_support.hpp"

using namespace std::chrono_literals;
using gather::downstream_client;
using gather::transfer_error;
using gather::transfer_request;
using gather::transfer_result;
using gather::test::eventually;
using gather::test::silent_server;
using gather::test::test_server;
using gather::test::unused_port;
using steady = std::chrono::steady_clock;
using namespace gather::test::downstream_client_support;

TEST_CASE("a 200 response arrives with its body and status", "[client]") {
  test_server server;
  server.get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello there", "text/plain");
  });
  server.start();
  downstream_client client;

  const transfer_result r = fetch_request(client, request_for(server.base_url() + "/hello"));
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 200);
  CHECK(r.body == "hello there");
  CHECK(client.inflight() == 0);
}

TEST_CASE("a non-2xx status passes through with its body", "[client]") {
  test_server server;
  server.get("/down", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"why":"maintenance"})", "application/json");
  });
  server.start();
  downstream_client client;

  const transfer_result r = fetch_request(client, request_for(server.base_url() + "/down"));
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 503);
  CHECK(r.body == R"({"why":"maintenance"})");
}

TEST_CASE("a refused connection is a connect error", "[client]") {
  downstream_client client;
  const auto start = steady::now();
  const std::string url = "http://127.0.0.1:" + std::to_string(unused_port()) + "/x";
  const transfer_result r = fetch_request(client, request_for(url, 2s));
  CHECK(r.error == transfer_error::connect);
  CHECK(r.http_status == 0);
  CHECK_FALSE(r.detail.empty());
  CHECK(elapsed_ms(start) < 1000);
}

// Whether this process has a socket in SYN_SENT towards 127.0.0.1:port (/proc/net/tcp).
bool syn_sent_to(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, "0100007F:%04X", port);
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (remote == wanted && state == "02")
      return true;
  }
  return false;
}

TEST_CASE("a request whose connect has not completed when connect returns leaves once it has", "[client]") {
  // The client sends right after a non-blocking connect. A server whose accept queue is full drops
  // the SYN (sent again ~1 s later), so the connect returns with the handshake still open: the send
  // must find the socket not yet writable and wait for it, not fail and not lose the request.
  int port = 0;
  const int server = gather::test::listen_on_loopback(0, port); // room for one queued connection
  const int blocker = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(blocker, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0); // fills it
  downstream_client client;
  auto promise = std::make_shared<std::promise<transfer_result>>();
  auto future = promise->get_future();
  client.submit(request_for("http://127.0.0.1:" + std::to_string(port) + "/late", 8s),
                [promise](transfer_result&& r) { promise->set_value(std::move(r)); });
  REQUIRE(eventually([&] { return syn_sent_to(port); }, 5s)); // its SYN was dropped
  const int first = ::accept(server, nullptr, nullptr);       // the blocker's: room again
  REQUIRE(first >= 0);
  pollfd waiting{server, POLLIN, 0};
  REQUIRE(::poll(&waiting, 1, 5000) == 1); // the SYN sent again completes the handshake
  const int conn = ::accept(server, nullptr, nullptr);
  REQUIRE(conn >= 0);
  std::string request;
  char chunk[4096];
  while (request.find("\r\n\r\n") == std::string::npos) {
    pollfd readable{conn, POLLIN, 0};
    REQUIRE(::poll(&readable, 1, 5000) == 1);
    const auto n = ::recv(conn, chunk, sizeof chunk, 0);
    REQUIRE(n > 0);
    request.append(chunk, static_cast<std::size_t>(n));
  }
  CHECK(request.rfind("GET /late HTTP/1.1\r\n", 0) == 0);
  const std::string answer = gather::test::raw_json_response(R"({"late":true})");
  REQUIRE(::send(conn, answer.data(), answer.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(answer.size()));
  REQUIRE(future.wait_for(5s) == std::future_status::ready);
  const transfer_result r = future.get();
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 200);
  CHECK(r.body == R"({"late":true})");
  for (const int fd : {conn, first, blocker, server})
    ::close(fd);
}

TEST_CASE("a server that never answers ends as timeout at the timeout", "[client]") {
  silent_server silent;
  downstream_client client;
  const auto start = steady::now();
  const transfer_result r = fetch_request(client, request_for(silent.base_url() + "/x", 200ms));
  const long took = elapsed_ms(start);
  CHECK(r.error == transfer_error::timeout);
  CHECK(r.http_status == 0);
  CHECK(took >= 190);
  CHECK(took < 1000);
}

TEST_CASE("slow_after: a call still unanswered runs `slow` once and goes on, and one that answers in time never does",
          "[client]") {
  test_server server;
  server.get("/late", [&server](const httplib::Request&, httplib::Response& res) {
    server.delay(300ms);
    res.set_content("late", "text/plain");
  });
  server.get("/fast", [](const httplib::Request&, httplib::Response& res) { res.set_content("fast", "text/plain"); });
  server.start();
  downstream_client client;
  std::atomic<int> slow_calls{0};
  std::atomic<long> slow_at{0};

  const auto start = steady::now();
  auto late = request_for(server.base_url() + "/late", 2s);
  late.slow_after = 50ms;
  late.slow = [&] {
    slow_at = elapsed_ms(start);
    ++slow_calls;
  };
  const transfer_result r = fetch_request(client, std::move(late));
  CHECK(r.error == transfer_error::none); // the transfer went on to its answer
  CHECK(r.body == "late");
  CHECK(slow_calls == 1);
  CHECK(slow_at >= 45);
  CHECK(slow_at < 280);

  auto fast = request_for(server.base_url() + "/fast", 2s);
  fast.slow_after = 200ms;
  fast.slow = [&] { ++slow_calls; };
  CHECK(fetch_request(client, std::move(fast)).body == "fast");
  // The timer that would have run it was the transfer's own, cancelled with the answer: a
  // transfer that outlives 200 ms after this one ended shows it did not fire.
  CHECK(fetch_request(client, request_for(server.base_url() + "/late", 2s)).body == "late");
  CHECK(slow_calls == 1);

  // Past slow_after the timeout still holds, counted from the start.
  silent_server silent;
  auto hung = request_for(silent.base_url() + "/x", 300ms);
  hung.slow_after = 100ms;
  hung.slow = [&] { ++slow_calls; };
  const auto hung_start = steady::now();
  CHECK(fetch_request(client, std::move(hung)).error == transfer_error::timeout);
  CHECK(elapsed_ms(hung_start) >= 290);
  CHECK(elapsed_ms(hung_start) < 1000);
  CHECK(slow_calls == 2);
}

TEST_CASE("a trickling body is cut at the timeout", "[client]") {
  test_server server;
  server.get("/trickle", [&server](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [&server](size_t sent, httplib::DataSink& sink) {
      if (sent >= 50) { // 5 s in all
        sink.done();
        return true;
      }
      if (sent > 0) server.delay(100ms); // the status line and a first byte go out at once
      return sink.write("x", 1);         // false once the client has gone
    });
  });
  server.start();
  downstream_client client;

  const auto start = steady::now();
  const transfer_result r = fetch_request(client, request_for(server.base_url() + "/trickle", 300ms));
  CHECK(r.error == transfer_error::timeout);
  CHECK(r.http_status == 200); // the status line had arrived
  CHECK(r.body.empty());       // a partial body is not handed out
  CHECK(elapsed_ms(start) < 1500);
}

TEST_CASE("a body over max_body_bytes is too_large", "[client]") {
  test_server server;
  const std::string big(10000, 'b');
  server.get("/sized", [&big](const httplib::Request&, httplib::Response& res) {
    res.set_content(big, "text/plain"); // announces Content-Length
  });
  server.get("/chunked", [&big](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [&big](size_t sent, httplib::DataSink& sink) {
      if (sent >= big.size()) {
        sink.done();
        return true;
      }
      return sink.write(big.data() + sent, 1000);
    });
  });
  server.start();
  downstream_client client;

  const std::string path = GENERATE(as<std::string>{}, "/sized", "/chunked");
  transfer_request request = request_for(server.base_url() + path);
  request.max_body_bytes = 4000;
  const transfer_result r = fetch_request(client, request);
  INFO(path << ": " << r.detail);
  CHECK(r.error == transfer_error::too_large);
  CHECK(r.body.empty());

  request.max_body_bytes = big.size(); // exactly at the cap is fine
  const transfer_result fits = fetch_request(client, request);
  CHECK(fits.error == transfer_error::none);
  CHECK(fits.body == big);
}

TEST_CASE("a redirect is reported, not followed", "[client]") {
  test_server server;
  server.get("/old", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/new"); });
  server.get("/new", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("moved here", "text/plain");
  });
  server.start();
  downstream_client client;

  const transfer_result r = fetch_request(client, request_for(server.base_url() + "/old"));
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 302);
  CHECK(server.calls() == 1);
}

TEST_CASE("a response head is held to 64 KiB as a whole, status line and header lines together", "[client][hostile]") {
  // Beast's own header limit counts the status line and the header lines apart (fuzz_response
  // found a head of up to twice the cap passing it); the client holds the whole head to the cap.
  const auto head_of = [](std::size_t reason_bytes, std::size_t header_bytes) {
    return "HTTP/1.1 200 " + std::string(reason_bytes, 'a') + "\r\nX-Pad: " + std::string(header_bytes, 'b') +
           "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  };
  downstream_client client;
  silent_server over{0, head_of(40000, 40000)}; // 80 KB: each part under 64 KiB, the whole over
  const transfer_result refused = fetch_request(client, request_for(over.base_url() + "/x", 5s));
  CHECK(refused.error == transfer_error::protocol);
  CHECK(refused.detail.find("header limit exceeded") != std::string::npos);
  silent_server under{0, head_of(30000, 30000)}; // 60 KB in all
  const transfer_result served = fetch_request(client, request_for(under.base_url() + "/x", 5s));
  CHECK(served.error == transfer_error::none);
  CHECK(served.body == "{}");
}
