// Who may come in, per route of one configuration generation: the route's bearer-token guard
// (auth.jwt) and its rate limiter (rate_limit). Built with the generation, never changed after;
// the limiter's buckets and the guard's per-thread caches change only through atomics and
// thread-local state (docs/security.md, "Who may come in").
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/admission/jwt_guard.hpp"
#include "gather/admission/rate_limiter.hpp"
#include "gather/admission/shared_limit.hpp"
#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

struct route_gate {
  std::unique_ptr<jwt_guard> jwt;       ///< null: no auth on the route
  std::unique_ptr<rate_limiter> limit;  ///< null: no rate limit
  std::unique_ptr<shared_limit> shared; ///< rate_limit.shared: decides instead of `limit`
};

struct admission_gates {
  std::vector<route_gate> routes; ///< one per route of the generation's config
};

/// The gates of `cfg`'s routes. URL key sets come from `keys` (the gateway's, kept across
/// reloads); without one (a tool, a test of the config alone) a jwks_url route has no set. A
/// shared rate limit needs `store` (without one it stays per process).
std::shared_ptr<const admission_gates> make_admission_gates(const config& cfg, jwks_registry* keys,
                                                            std::shared_ptr<shared_store> store = nullptr);

/// What the gates decided for one request.
struct gate_verdict {
  int status = 0;             ///< 0: let in; else 401, 403, 429 or 503
  std::string detail;         ///< for the log line only: "auth: signature", "rate_limit: ..."
  std::vector<std::pair<std::string, std::string>> headers; ///< WWW-Authenticate, Retry-After
  std::shared_ptr<const nlohmann::json> claims; ///< the verified token's claims, when checked
  std::optional<auth_outcome> auth;             ///< the token check's outcome, when the route has auth
  bool rate_limited = false;
  /// A shared limit in exact mode that could not decide locally: the store is to be asked for
  /// `limit_key` (the request is otherwise let in; it starts once the store decides).
  bool ask_store = false;
  std::string limit_key;
};

/// Runs `gate` on a request: the token (its `Authorization` value), then the rate limit under the
/// request's key. `headers`: the request's, names lower-case; `peer`: its client's address (request_head::client).
gate_verdict pass_gate(const route_gate& gate, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& peer, std::chrono::steady_clock::time_point now);

/// Gives a request that passed a route's auth its claims: `{claim.c}` reads them, and each
/// forward_claims header replaces whatever the client sent under that name (dropped even when
/// the token lacks the claim: a client never speaks for a claim).
void set_claims(inbound_request& in, const jwt_config& jwt, std::shared_ptr<const nlohmann::json> claims);

} // namespace gather
