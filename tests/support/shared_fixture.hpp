// What the shared-store tests share (tests/shared/): a downstream and a real redis-server,
// `gather serve` processes configured with `shared`, their /healthz and /metrics read as a user
// would, and a load that counts what a limit admitted.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/redis_server.hpp"
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
  /// Waits until /healthz says the store is up.
  bool await_shared_up(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    return eventually([&] { return shared_up() == true; }, limit);
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

/// A started downstream (its answers set by `routes`) and a redis-server for it to share through.
struct shared_rig {
  explicit shared_rig(const std::function<void(test_server&)>& routes = serve_empty_object) {
    routes(down);
    down.start();
  }
  /// A `shared` section on this store: {"redis": ...} and `more`.
  nlohmann::json store(const nlohmann::json& more) const {
    nlohmann::json out = {{"redis", redis.url()}};
    out.update(more);
    return out;
  }
  test_server down;
  redis_server redis;
};

/// `count` gateways on `cfg`, returned once each sees the store up and all `count` in it.
inline std::vector<std::unique_ptr<served_gateway>> gateways_seeing_each_other(const nlohmann::json& cfg,
                                                                              int count) {
  std::vector<std::unique_ptr<served_gateway>> gateways;
  for (int i = 0; i < count; ++i)
    gateways.push_back(std::make_unique<served_gateway>(cfg));
  for (auto& gw : gateways)
    REQUIRE(eventually([&] { return gw->shared_up() == true && gw->metric("gather_shared_gateways") == count; },
                       std::chrono::seconds(10)));
  return gateways;
}

/// A shared limit on the whole route.
inline nlohmann::json route_limit(nlohmann::json rate_per_s, nlohmann::json burst) {
  return {{"per", "route"}, {"rate_per_s", rate_per_s}, {"burst", burst}, {"shared", true}};
}

/// What GET /p on every gateway at once, each on its own keep-alive connection, met for a while.
struct limited_load {
  long admitted = 0, refused = 0, other = 0, missing_retry_after = 0;
  double seconds = 0; // how long it ran, by the client's clock
  std::string said() const {
    return "admitted " + std::to_string(admitted) + ", refused " + std::to_string(refused) + " in " +
           std::to_string(seconds) + " s";
  }
};
inline limited_load load_every_gateway(std::vector<std::unique_ptr<served_gateway>>& gateways,
                                       std::chrono::seconds run_for) {
  std::atomic<long> admitted{0}, refused{0}, other{0}, missing_retry_after{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (auto& gw : gateways)
    clients.emplace_back([&, port = gw->port] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      while (std::chrono::steady_clock::now() - start < run_for) {
        const auto r = client.Get("/p");
        if (r && r->status == 429 && r->get_header_value("Retry-After").empty())
          ++missing_retry_after;
        (r && r->status == 200 ? admitted : r && r->status == 429 ? refused : other)++;
      }
    });
  for (auto& t : clients)
    t.join();
  return {admitted, refused, other, missing_retry_after,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

} // namespace gather::test
