// What the HTTP front hands to a coordinator: the parts of the inbound request a route may read.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gather/values/trace_context.hpp"

namespace gather {
class store_budget; // gather/values/store_budget.hpp
}

namespace gather {

using steady_time = std::chrono::steady_clock::time_point;

struct inbound_request {
  std::string request_id;
  std::vector<std::pair<std::string, std::string>> captures; ///< decoded path captures
  std::multimap<std::string, std::string> query;             ///< decoded query parameters
  std::multimap<std::string, std::string> headers;           ///< names lower-case
  steady_time arrived;
  trace_context trace; ///< the request's trace (gather/tracing/traceparent.hpp)
  /// The verified token's claims on a route with `auth` (what `{claim.c}` reads); null otherwise.
  std::shared_ptr<const nlohmann::json> claims;
  /// The route's `forward_claims` header names (lower-case): their inbound values were dropped
  /// and `headers` holds the claims' values instead; every downstream call carries them.
  std::vector<std::string> claim_headers;
  /// A write route's JSON body as parsed once at admission (what `{body...}` reads; null when a
  /// DELETE came without one), and its bytes as they came (an HTTP write's default body).
  std::shared_ptr<const nlohmann::json> body;
  std::string body_text;
  /// Null without a shared store; else every store operation of this request spends from it.
  std::shared_ptr<store_budget> store_time;
  /// The client's address (`{client.ip}`): the peer's, or the one its trusted proxies forwarded.
  std::string client_ip;

  /// First value of a query parameter / header (header name lower-case), "" when absent.
  std::string query_value(const std::string& name) const;
  std::string header_value(const std::string& lower_name) const;
};

} // namespace gather
