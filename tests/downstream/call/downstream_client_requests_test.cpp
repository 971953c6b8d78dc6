// What goes out: header lines, the target as rendered, methods, bodies, and big requests.
//
// The downstream client against real servers on loopback, and what it read classified by both of
// the body's validators. Time limits are generous on purpose (a loaded 2-core machine): they
// separate "bounded by the timeout" from "waited for the server".
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gather/downstream/call/downstream_client.hpp"
#include "support/recording_server.hpp"
#include "support/test_server.hpp"
#include "downstream/call/downstream_client_test_support.hpp"

using namespace std::chrono_literals;
using gather::downstream_client;
using gather::transfer_error;
using gather::transfer_request;
using gather::transfer_result;
using gather::test::recorded_answer;
using gather::test::recorded_request;
using gather::test::recording_server;
using gather::test::test_server;
using steady = std::chrono::steady_clock;
using namespace gather::test::downstream_client_support;

TEST_CASE("request headers are sent and the path is sent as rendered", "[client]") {
  test_server server;
  std::string seen_header, seen_path;
  server.get(R"(/a/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    seen_header = req.get_header_value("X-Tenant");
    seen_path = req.path;
    res.set_content("{}", "application/json");
  });
  server.start();
  downstream_client client;

  transfer_request request = request_for(server.base_url() + "/a/../b");
  request.header_lines = "X-Tenant: acme\r\n";
  const transfer_result r = fetch_request(client, request);
  CHECK(r.http_status == 200);
  CHECK(seen_header == "acme");
  CHECK(seen_path == "/a/../b"); // curl would otherwise squash it to "/b"
}

TEST_CASE("header lines without their last CRLF are refused at once, never sent", "[client]") {
  test_server server;
  server.get("/h", [](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
  server.start();
  downstream_client client;

  transfer_request request = request_for(server.base_url() + "/h");
  request.header_lines = "X-Tenant: acme"; // would end the request's head inside the line
  const transfer_result r = fetch_request(client, request);
  CHECK(r.error == transfer_error::protocol);
  CHECK(r.detail == "header lines not ended by CRLF");
  CHECK(server.calls() == 0);
  request.header_lines = "X-Tenant: acme\r\n";
  CHECK(fetch_request(client, request).http_status == 200);
  CHECK(server.calls() == 1);
}

TEST_CASE("a URL the client cannot call is a protocol error, never a crash", "[client]") {
  downstream_client client;
  for (const char* url : {"http://127.0.0.1:99999999999/x", "http://127.0.0.1:0/x", "ftp://127.0.0.1/x",
                          "http://user@127.0.0.1/x", "http:///x"}) {
    INFO(url);
    const transfer_result r = fetch_request(client, request_for(url, 1s));
    CHECK(r.error == transfer_error::protocol);
  }
}

TEST_CASE("a request's bytes: its target, Host as written, its header lines in order, and a Content-Length but on a bodiless GET", "[client]") {
  // Byte for byte as they came off the socket (the request is written in place, h1_client.cpp).
  recording_server server([](const recorded_request&) { return recorded_answer{200, "{}"}; });
  downstream_client client;
  auto get = request_for(server.base_url() + "/t?a=1&b=two");
  get.header_lines = "X-One: 1\r\nX-Two: two words\r\n";
  CHECK(fetch_request(client, get).http_status == 200);
  auto removal = request_for(server.base_url() + "?only=query"); // "/?only=query" is sent
  removal.method = "DELETE";
  CHECK(fetch_request(client, removal).http_status == 200);
  auto put = request_for(server.base_url() + "/p");
  put.method = "PUT";
  put.header_lines = "Content-Type: application/json\r\n";
  put.body = std::string(1000, 'x').insert(0, "{\"k\":\"").append("\"}");
  CHECK(fetch_request(client, put).http_status == 200);
  const auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  const auto host = "127.0.0.1:" + std::to_string(server.port());
  CHECK(seen[0].method == "GET");
  CHECK(seen[0].target == "/t?a=1&b=two");
  REQUIRE(seen[0].headers.size() == 3);
  CHECK(seen[0].headers[0] == std::make_pair(std::string("host"), host));
  CHECK(seen[0].headers[1] == std::make_pair(std::string("x-one"), std::string("1")));
  CHECK(seen[0].headers[2] == std::make_pair(std::string("x-two"), std::string("two words")));
  CHECK(seen[0].body.empty());
  CHECK(seen[1].method == "DELETE");
  CHECK(seen[1].target == "/?only=query");
  CHECK(seen[1].header("host") == host);
  CHECK(seen[1].count("content-length") == 1);
  CHECK(seen[1].header("content-length") == "0");
  CHECK(seen[2].method == "PUT");
  CHECK(seen[2].target == "/p");
  CHECK(seen[2].header("content-type") == "application/json");
  CHECK(seen[2].header("content-length") == std::to_string(put.body.size()));
  CHECK(seen[2].body == put.body);
}

TEST_CASE("a POST carries its body with a Content-Length, and the connection is kept for the next call", "[client]") {
  test_server server;
  std::mutex mutex;
  std::vector<std::string> seen;
  server.raw().Post("/in", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.push_back(req.get_header_value("Content-Type") + "|" + req.get_header_value("Content-Length") +
                   "|" + req.body);
    res.set_content("{}", "application/json");
  });
  server.get("/after", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
  server.start();
  downstream_client client;
  auto post = request_for(server.base_url() + "/in");
  post.method = "POST";
  post.header_lines = "Content-Type: application/json\r\n";
  post.body = R"({"resourceSpans":[]})";
  auto r = fetch_request(client, post);
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 200);
  auto empty = request_for(server.base_url() + "/in");
  empty.method = "POST";
  CHECK(fetch_request(client, empty).http_status == 200); // Content-Length: 0, or the server would wait
  auto after = fetch_request(client, request_for(server.base_url() + "/after"));
  CHECK(after.body == "ok");
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == R"(application/json|20|{"resourceSpans":[]})");
  CHECK(seen[1] == "|0|");
}

TEST_CASE("a request bigger than the socket's send buffer leaves whole: what the first send leaves goes after it", "[client]") {
  // 32 MiB is more than loopback's largest send buffer (tcp_wmem's maximum, 4 MiB by default), so
  // the client's first non-blocking send takes part of it and the rest must follow, in order.
  constexpr std::size_t size = 32u << 20;
  std::string body(size, '\0');
  for (std::size_t i = 0; i < size; ++i)
    body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  test_server server;
  std::mutex mutex;
  std::string got;
  server.raw().Post("/in", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex);
    got = req.body;
    res.set_content("{}", "application/json");
  });
  server.start();
  downstream_client client;
  auto post = request_for(server.base_url() + "/in", 20s);
  post.method = "POST";
  post.body = body;
  const auto r = fetch_request(client, post);
  CHECK(r.error == transfer_error::none);
  CHECK(r.http_status == 200);
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(got.size() == size);
  const bool same_bytes = got == body; // (not CHECK(got == body): Catch would print 64 MiB)
  CHECK(same_bytes);
}
