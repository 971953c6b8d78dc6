// What the front's tests (tests/front/front_*_test.cpp) share: a downstream and a config with an
// aggregate and a batch route, the check of /p's answer, reading a socket until the peer closes,
// and /debug/actors on a kept-alive connection.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

namespace gather::test::front_support {

/// A downstream answering {"ok": 1} on /ok and {"id": <capture>} on /items/<capture>.
struct front_downstream {
  test_server server;
  explicit front_downstream(std::size_t threads = 64) : server(threads) {
    server.get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    server.get("/items/(.*)", [](const httplib::Request& req, httplib::Response& res) {
      answer_json(res, {{"id", req.matches[1].str()}});
    });
  }
  std::string base_url() const { return server.base_url(); }
};

/// /p (GET: one required section "s" on /ok) and /orders (a batch route on /items/{item}).
inline nlohmann::json front_config(const std::string& base,
                                   nlohmann::json top = nlohmann::json::object()) {
  nlohmann::json cfg = route_config_json("/p", {section("s", base + "/ok", 2000, {{"required", true}})},
                                         3000, std::move(top));
  cfg["routes"].push_back(
      {{"path", "/orders"}, {"batch", {{"url", base + "/items/{item}"}, {"timeout_ms", 2000}}}});
  return cfg;
}

/// The aggregate answer of /p in front_config.
inline void check_p_answer(const raw_response& r) {
  INFO("status " << r.status << " body " << r.body);
  CHECK(r.status == 200);
  const auto body = nlohmann::json::parse(r.body, nullptr, false);
  REQUIRE_FALSE(body.is_discarded());
  CHECK(body["data"]["s"] == nlohmann::json{{"ok", 1}});
  CHECK(body["sections"]["s"]["status"] == "ok");
  CHECK_FALSE(r.header("x-request-id").empty());
}

/// Everything the peer sends on `fd` until it closes (EOF or reset) or `limit` passes;
/// `closed` says which.
inline std::string read_until_closed(int fd, std::chrono::milliseconds limit, bool& closed) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string got;
  closed = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0)
      return got;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return got;
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      got.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      closed = true;
      return got;
    }
  }
}

/// GET /debug/actors on `conn` (keep-alive): its JSON, or nullopt.
inline std::optional<nlohmann::json> debug_actors(raw_connection& conn) {
  if (!conn.send(get_head("/debug/actors")))
    return std::nullopt;
  auto r = conn.read_response();
  if (!r || r->status != 200)
    return std::nullopt;
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  if (body.is_discarded())
    return std::nullopt;
  return body;
}

} // namespace gather::test::front_support
