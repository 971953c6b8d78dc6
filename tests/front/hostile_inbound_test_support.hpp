// What the hostile inbound tests (tests/front/hostile_inbound_*_test.cpp) share: a downstream
// echoing its capture, a config with an aggregate, a capture and a batch route, the check of a
// JSON answer, and the check that the gateway still serves.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

namespace gather::test::hostile_inbound_support {

/// A downstream answering {"id": <capture>} on /items/<capture> and {"ok": 1} on /ok.
struct inbound_echo_downstream {
  test_server server;
  inbound_echo_downstream() {
    server.get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    server.get("/items/(.*)", [](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json body = {{"id", req.matches[1].str()}, {"tenant", req.get_header_value("X-Tenant")}};
      res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
    });
    server.start();
  }
};

/// /p (one required section), /items/{id} (a capture and a forwarded header), /orders (batch).
inline nlohmann::json hostile_config(const std::string& base, nlohmann::json top = nlohmann::json::object()) {
  nlohmann::json cfg = route_config_json("/p", {section("s", base + "/ok", 2000, {{"required", true}})}, 3000,
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
inline void check_json_response(const raw_response& r) {
  INFO("status " << r.status << " body " << r.body);
  CHECK(r.header("content-type").rfind("application/json", 0) == 0);
  CHECK(valid_utf8(r.body));
  CHECK_NOTHROW(nlohmann::json::parse(r.body));
  CHECK_FALSE(r.header("x-request-id").empty());
  if (r.status >= 400) {
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    CHECK(body.contains("error"));
    CHECK(body.value("request_id", "") == r.header("x-request-id"));
  }
}

/// The gateway still answers an ordinary request, quickly.
inline void check_still_serving(running_gateway& gw) {
  const auto start = std::chrono::steady_clock::now();
  auto r = gw.get("/p");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(ms_since(start) < 1000);
}

} // namespace gather::test::hostile_inbound_support
