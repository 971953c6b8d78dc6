// Hostile downstreams behind a real in-process gateway: endless and oversized bodies, deep and
// invalid JSON, redirects, resets and servers that stall. Each ends its section as `error` or
// `timeout` within its bounds, and the response stays valid JSON. (The 100,000-level body, null,
// non-JSON and the unreachable redirect are in gateway_sections_test.cpp; the transfer-level
// trickle, cap and redirect in downstream_client_answers_test.cpp.)
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
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

/// A TCP server whose every connection runs `script(fd, stopping)` on a thread of its own: for
/// downstreams that misbehave below HTTP (resets, stalls, half responses).
class scripted_server {
public:
  using script = std::function<void(int fd, const std::atomic<bool>& stopping)>;

  explicit scripted_server(script s) : script_(std::move(s)) {
    fd_ = listen_on_loopback(64, port_);
    acceptor_ = std::thread([this] {
      while (!stopping_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0)
          continue;
        const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0)
          continue;
        ++accepted_;
        std::lock_guard<std::mutex> lock(mutex_);
        connections_.emplace_back([this, conn] {
          script_(conn, stopping_);
          ::close(conn);
        });
      }
    });
  }

  ~scripted_server() {
    stopping_ = true;
    acceptor_.join();
    for (auto& t : connections_)
      t.join();
    ::close(fd_);
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

private:
  script script_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> connections_;
};

void send_text(int fd, const std::string& text) {
  (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

/// Reads the request head (up to the blank line) so the gateway's send completes.
void read_head(int fd) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      return;
    got.append(buf, static_cast<std::size_t>(n));
  }
}

/// Sleeps until `limit` passes or the server stops.
void stall(const std::atomic<bool>& stopping, milliseconds limit = milliseconds{20000}) {
  const auto until = clock_type::now() + limit;
  while (!stopping && clock_type::now() < until)
    std::this_thread::sleep_for(milliseconds{10});
}


/// A route /p with one optional section on `url` (fallback "F"), a 3 s deadline.
json one_section(const std::string& url, int timeout_ms, json extra = json::object(),
                 json top = json::object()) {
  extra["fallback"] = "F";
  return route_config_json("/p", {section("s", url, timeout_ms, extra)}, 3000, std::move(top));
}

/// GETs /p and returns the body, after checking it is a valid 200 JSON response.
json fetch_through_gateway(running_gateway& gw) {
  auto r = gw.get("/p");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(valid_utf8(r->body));
  return json::parse(r->body);
}

void check_section(const json& body, const std::string& status) {
  INFO(body.dump());
  CHECK(body["sections"]["s"]["status"] == status);
  CHECK(body["sections"]["s"]["source"] == "fallback");
  CHECK(body["data"]["s"] == "F");
  CHECK(body["degraded"] == true);
}

void check_no_leftovers(running_gateway& gw) {
  CHECK(eventually([&] {
    return gw.gw().stats().coordinators.load() == 0 && gw.gw().stats().workers.load() == 0;
  }));
}

} // namespace

TEST_CASE("an endless body ends at max_response_bytes as error, long before the timeout", "[hostile]") {
  std::atomic<bool> writer_stopped{false};
  test_server down;
  const std::string chunk(65536, ' ');
  down.get("/endless", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      if (!sink.write(chunk.data(), chunk.size())) {
        writer_stopped = true; // the gateway closed the connection
        return false;
      }
      return true;
    });
  });
  down.start();
  running_gateway gw{one_section(down.base_url() + "/endless", 2500, {}, {{"max_response_bytes", 1048576}})};
  const auto start = clock_type::now();
  auto body = fetch_through_gateway(gw);
  check_section(body, "error");
  CHECK(ms_since(start) < 2000);
  CHECK(eventually([&] { return writer_stopped.load(); }));
  check_no_leftovers(gw);
}

TEST_CASE("a body over max_response_bytes is an error, however it is framed", "[hostile]") {
  const std::string framing = GENERATE(as<std::string>{}, "content-length", "close-delimited");
  INFO(framing);
  const std::string big = "[" + std::string(2 * 1048576, ' ') + "1]";
  scripted_server down([&](int fd, const std::atomic<bool>& stopping) {
    read_head(fd);
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
    head += framing == "content-length" ? "Content-Length: " + std::to_string(big.size()) + "\r\n\r\n"
                                        : "Connection: close\r\n\r\n";
    send_text(fd, head);
    for (std::size_t at = 0; at < big.size() && !stopping; at += 65536)
      send_text(fd, big.substr(at, 65536));
  });
  running_gateway gw{one_section(down.base_url() + "/big", 2500, {}, {{"max_response_bytes", 1048576}})};
  const auto start = clock_type::now();
  check_section(fetch_through_gateway(gw), "error");
  CHECK(ms_since(start) < 2000);
  check_no_leftovers(gw);
}

TEST_CASE("deeply nested JSON is an error however the section reads it", "[hostile]") {
  test_server down;
  down.get("/deep-object", [](const httplib::Request&, httplib::Response& res) {
    std::string body;
    for (int i = 0; i < 100000; ++i)
      body += "{\"a\":";
    body += "1" + std::string(100000, '}');
    res.set_content(body, "application/json");
  });
  down.get("/at-limit", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(512, '[') + std::string(512, ']'), "application/json");
  });
  down.get("/over-limit", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(513, '[') + std::string(513, ']'), "application/json");
  });
  down.start();
  const auto b = down.base_url();
  json cfg = route_config_json(
      "/p",
      {section("plain", b + "/deep-object", 2000, {{"fallback", "F"}}),
       section("projected", b + "/deep-object", 2000, {{"fallback", "F"}, {"fields", {"a.a.a"}}}),
       section("at", b + "/at-limit", 2000, {{"fallback", "F"}}),
       section("over", b + "/over-limit", 2000, {{"fallback", "F"}})},
      3000);
  cfg["routes"].push_back(
      {{"path", "/batch"}, {"batch", {{"url", b + "/deep-object?i={item}"}, {"timeout_ms", 2000}}}});
  running_gateway gw{cfg};
  auto body = fetch_through_gateway(gw);
  CHECK(body["sections"]["plain"]["status"] == "error");
  CHECK(body["sections"]["projected"]["status"] == "error");
  CHECK(body["sections"]["at"]["status"] == "ok"); // exactly 512 levels is fine
  CHECK(body["sections"]["over"]["status"] == "error");
  auto batch = gw.post("/batch", R"({"items": [1, 2]})");
  REQUIRE(batch);
  REQUIRE(batch->status == 200);
  auto rows = json::parse(batch->body)["results"];
  CHECK(rows[0]["status"] == "error");
  CHECK(rows[1]["status"] == "error");
}

TEST_CASE("invalid UTF-8 in a downstream JSON string is an error and the response stays valid", "[hostile]") {
  test_server down;
  const std::vector<std::string> bodies = {
      "{\"name\": \"\xff\xfe\"}",          // bytes that are never UTF-8
      "{\"name\": \"\xc0\xaf\"}",          // an overlong '/'
      "{\"name\": \"\xed\xa0\x80\"}",      // a UTF-16 surrogate encoded as UTF-8
      "{\"name\": \"\\ud800\"}",           // a lone surrogate escape
      "{\"name\": \"caf\xc3\"}",           // truncated sequence
      "{\"\xff\": 1}",                     // in a key
  };
  for (std::size_t i = 0; i < bodies.size(); ++i)
    down.get("/b" + std::to_string(i), [body = bodies[i]](const httplib::Request&, httplib::Response& res) {
      res.set_content(body, "application/json");
    });
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"name\": \"caf\xc3\xa9 \\u00e9 \xf0\x9f\x98\x80\"}", "application/json");
  });
  down.start();
  json sections = json::array();
  for (std::size_t i = 0; i < bodies.size(); ++i)
    sections.push_back(section("b" + std::to_string(i), down.base_url() + "/b" + std::to_string(i), 2000,
                               {{"fallback", "F"}}));
  sections.push_back(section("ok", down.base_url() + "/ok", 2000, {{"fallback", "F"}}));
  sections.push_back(section("projected", down.base_url() + "/b0", 2000, {{"fallback", "F"}, {"fields", {"name"}}}));
  running_gateway gw{route_config_json("/p", sections, 3000)};
  auto r = gw.get("/p");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(valid_utf8(r->body));
  auto body = json::parse(r->body);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    INFO("body " << i);
    CHECK(body["sections"]["b" + std::to_string(i)]["status"] == "error");
  }
  CHECK(body["sections"]["projected"]["status"] == "error");
  CHECK(body["sections"]["ok"]["status"] == "ok");
  CHECK(body["data"]["ok"]["name"] == "caf\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80");
}

TEST_CASE("a redirect to another host is not followed", "[hostile]") {
  test_server elsewhere;
  elsewhere.get("/.*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"stolen": true})", "application/json");
  });
  elsewhere.start();
  test_server down;
  const int code = GENERATE(301, 302, 303, 307, 308);
  INFO("status " << code);
  down.get("/moved", [&](const httplib::Request&, httplib::Response& res) {
    res.set_redirect(elsewhere.base_url() + "/target", code);
  });
  down.start();
  running_gateway gw{one_section(down.base_url() + "/moved", 2000)};
  auto body = fetch_through_gateway(gw);
  check_section(body, "error");
  CHECK(elsewhere.calls() == 0);
  CHECK(body.dump().find(elsewhere.base_url()) == std::string::npos);
}

TEST_CASE("a reset in the middle of the body is an error at once", "[hostile]") {
  scripted_server down([](int fd, const std::atomic<bool>&) {
    read_head(fd);
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\": [1, 2,");
    std::this_thread::sleep_for(milliseconds{50});
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l); // close() sends an RST
  });
  running_gateway gw{one_section(down.base_url() + "/reset", 2500)};
  const auto start = clock_type::now();
  check_section(fetch_through_gateway(gw), "error");
  CHECK(ms_since(start) < 1500);
  check_no_leftovers(gw);
}

TEST_CASE("a downstream that stalls ends as timeout at timeout_ms", "[hostile]") {
  const std::string behaviour = GENERATE(as<std::string>{}, "accepts and never reads",
                                         "headers then silence", "half a body then silence");
  INFO(behaviour);
  scripted_server down([&](int fd, const std::atomic<bool>& stopping) {
    if (behaviour == "headers then silence") {
      read_head(fd);
      send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    } else if (behaviour == "half a body then silence") {
      read_head(fd);
      send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":");
    }
    stall(stopping);
  });
  running_gateway gw{one_section(down.base_url() + "/stall", 400)};
  const auto start = clock_type::now();
  auto body = fetch_through_gateway(gw);
  const auto took = ms_since(start);
  check_section(body, "timeout");
  CHECK(took >= 350);
  CHECK(took < 1500);
  CHECK(down.accepted() == 1);
  check_no_leftovers(gw);
}
