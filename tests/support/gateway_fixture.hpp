// A real gateway in the test process, on an ephemeral loopback port, and a client for it.
#pragma once

#include <memory>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"
#include "gather/gateway.hpp"

namespace gather::test {

/// One section of a route config: name, url, timeout_ms, plus `extra` keys.
nlohmann::json section(const std::string& name, const std::string& url, int timeout_ms,
                            nlohmann::json extra = nlohmann::json::object());

/// A config with one aggregate route `path` holding `sections`; `top` adds or overrides top-level keys.
nlohmann::json route_config_json(const std::string& path, nlohmann::json sections, int deadline_ms,
                                 nlohmann::json top = nlohmann::json::object());

/// A config with one batch route `path` whose `batch` object is `batch`; `top` adds or overrides
/// top-level keys.
nlohmann::json batch_route_config_json(const std::string& path, nlohmann::json batch,
                                       nlohmann::json top = nlohmann::json::object());

class running_gateway {
public:
  explicit running_gateway(const nlohmann::json& config_json);
  ~running_gateway();

  int port() const { return port_; }
  gateway& gw() { return *gateway_; }
  /// A fresh client (10 s read timeout), safe to use from any one thread.
  httplib::Client client() const;
  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) const;
  /// POSTs `body` as application/json.
  httplib::Result post(const std::string& path, const std::string& body,
                       const httplib::Headers& headers = {}) const;

private:
  std::unique_ptr<gateway> gateway_;
  int port_ = 0;
};

/// Milliseconds since `start`.
long long ms_since(std::chrono::steady_clock::time_point start);

/// `n` GETs of `prefix` + 0..n-1, one after another on one connection; how many answered 200.
int answered_ok(const running_gateway& gw, const std::string& prefix, int n);

/// Threads of this process right now (entries of /proc/self/task).
int thread_count();

} // namespace gather::test
