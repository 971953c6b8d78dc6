// What the shared-store tests share: `gather serve` processes configured with `shared`, their
// /healthz and /metrics read as a user would.
#pragma once

#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

namespace gather::test {

/// A gateway with one route /p (one required section on `down`) limited by `limit`, sharing
/// through `shared`.
inline nlohmann::json limited_gateway_config(const test_server& down, nlohmann::json shared,
                                             nlohmann::json limit) {
  nlohmann::json route = {{"path", "/p"},
                          {"rate_limit", std::move(limit)},
                          {"sections", {{{"name", "a"}, {"url", down.base_url() + "/a"},
                                         {"timeout_ms", 2000}, {"required", true}}}}};
  return {{"listen", "127.0.0.1:0"}, {"shared", std::move(shared)}, {"routes", {route}}};
}

/// A running `gather serve` and a client of it.
struct served_gateway {
  explicit served_gateway(const nlohmann::json& cfg)
      : process(binary, {"serve", "--config", temp_file(cfg.dump())}) {
    const auto line = process.wait_for_line("listening on");
    REQUIRE(line);
    port = port_of(*line);
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_keep_alive(true);
  }
  /// /healthz's "shared": {"up": ...}; nullopt when absent or unreadable.
  std::optional<bool> shared_up() {
    httplib::Client probe("127.0.0.1", port);
    const auto r = probe.Get("/healthz");
    if (!r || r->status != 200)
      return std::nullopt;
    const auto body = nlohmann::json::parse(r->body, nullptr, false);
    if (!body.is_object() || !body.contains("shared"))
      return std::nullopt;
    return body["shared"].value("up", false);
  }
  /// One sample of /metrics; -1 when absent.
  long metric(const std::string& series) {
    httplib::Client probe("127.0.0.1", port);
    const auto r = probe.Get("/metrics");
    if (!r)
      return -1;
    const auto at = r->body.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::stol(r->body.substr(at + series.size() + 2));
  }
  int status(const httplib::Headers& headers = {}) {
    const auto r = client->Get("/p", headers);
    return r ? r->status : -1;
  }
  child_process process;
  int port = 0;
  std::unique_ptr<httplib::Client> client;
};

/// A downstream whose /a answers {} at once.
inline void serve_empty_object(test_server& down) {
  down.get("/a", [](const httplib::Request&, httplib::Response& res) { answer_json(res, nlohmann::json::object()); });
}

} // namespace gather::test
