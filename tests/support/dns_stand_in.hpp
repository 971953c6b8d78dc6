// A DNS server for the tests (tests/support/dns_server.py, python3-dnslib) in its own process,
// answering A, AAAA and SRV on 127.0.0.1 from a zone the test sets and may change while it runs:
// an endpoint_watch is pointed at it through endpoint_watch_options::servers.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"

namespace gather::test {

class dns_stand_in {
public:
  /// Serves `zone` (dns_server.py's top says what it holds).
  explicit dns_stand_in(const nlohmann::json& zone);
  ~dns_stand_in();
  /// Answers from `zone` from the next query on (written whole, then renamed into place).
  void set_zone(const nlohmann::json& zone);
  /// "127.0.0.1:N", as endpoint_watch_options::servers takes it.
  std::string servers() const { return "127.0.0.1:" + std::to_string(port_); }
  /// Waits for the server to read a query for `name` (at most `limit`).
  bool saw_query(const std::string& name, std::chrono::milliseconds limit = std::chrono::seconds(5));

private:
  std::string zone_path_;
  child_process process_;
  int port_ = 0;
};

} // namespace gather::test
