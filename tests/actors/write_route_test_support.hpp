// What the write route tests (tests/actors/write_route_*_test.cpp) share: a cart service, the
// config of its write route, and a request written and answered over a raw connection.
#pragma once

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/raw_client.hpp"
#include "support/recording_server.hpp"

namespace gather::test::write_route_support {

/// A cart service: POST .../items answers `write_answer` (201 with the cart's id by default),
/// GET /carts/ID the cart, anything else 404.
struct cart_downstream {
  recorded_answer write_answer{201, R"({"cart_id":"c7","count":3})", {}};
  recording_server server{[this](const recorded_request& r) {
    if (r.method != "GET")
      return write_answer;
    if (r.target.rfind("/carts/", 0) == 0)
      return recorded_answer{200, R"({"lines":[{"sku":"b-1","quantity":3}]})", {}};
    return recorded_answer{404, "{}", {}};
  }};
};

inline nlohmann::json add_route(const recording_server& server, nlohmann::json write_extra = nlohmann::json::object(),
                                nlohmann::json route_extra = nlohmann::json::object(), bool with_reads = true) {
  nlohmann::json write = {{"name", "add"}, {"url", server.base_url() + "/carts/{cart}/items"}, {"timeout_ms", 500},
                          {"forward_headers", {"x-tenant"}}};
  for (auto& [k, v] : write_extra.items())
    write[k] = v;
  nlohmann::json route = {{"path", "/carts/{cart}/items"}, {"method", "POST"}, {"deadline_ms", 1500}, {"write", write}};
  if (with_reads)
    route["sections"] = {{{"name", "cart"}, {"url", server.base_url() + "/carts/{add.cart_id}?sku={body.sku}"},
                          {"timeout_ms", 300}, {"required", true},
                          {"forward_headers", {"x-tenant", "idempotency-key"}}}};
  for (auto& [k, v] : route_extra.items())
    route[k] = v;
  return {{"listen", "127.0.0.1:0"}, {"max_inflight", 64}, {"max_body_bytes", 4096}, {"routes", {route}}};
}

/// A request as the client writes it: method, target, extra header lines (each CRLF-ended), body.
inline std::string request_bytes(const std::string& method, const std::string& target, const std::string& headers,
                                 const std::string& body) {
  return method + " " + target + " HTTP/1.1\r\nHost: gw\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline raw_response send_raw(int port, const std::string& bytes) {
  raw_connection c(port);
  REQUIRE(c.send(bytes));
  auto r = c.read_response();
  REQUIRE(r);
  return *r;
}

} // namespace gather::test::write_route_support
