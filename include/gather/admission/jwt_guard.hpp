// One route's bearer-token check (auth.jwt): the token from the Authorization header, its
// signature against the route's JWK set, its claims against the route's policy.
//
// A token is verified by OpenSSL once per event loop thread and key set: each thread keeps the
// tokens it verified (at most verified_tokens_per_thread and verified_token_bytes_per_thread,
// all dropped when full) and re-runs
// only the claim checks on them, which depend on the time. No lock is taken per request: the key
// set is re-read only when its version changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gather/admission/jwks_source.hpp"
#include "gather/admission/jwt.hpp"
#include "gather/config/config.hpp"

namespace gather {

constexpr std::size_t verified_tokens_per_thread = 1024;
constexpr std::size_t verified_token_bytes_per_thread = 1024 * 1024;

/// What a check found; the metric's `result` label and the answer follow from it.
struct auth_outcome {
  jwt_failure failure = jwt_failure::none;
  bool unavailable = false; ///< no key set was ever had: 503 upstream_unavailable
  std::shared_ptr<const nlohmann::json> claims; ///< the token's claims when it passed
};

class jwt_guard {
public:
  jwt_guard(jwt_config cfg, std::shared_ptr<jwks_source> keys);

  /// `authorization`: the request's Authorization value ("" when absent); `now`: seconds since
  /// the epoch. Thread-safe.
  auth_outcome check(std::string_view authorization, double now) const;

  const jwt_config& config() const { return cfg_; }
  const jwks_source& source() const { return *keys_; }

private:
  jwt_config cfg_;
  std::shared_ptr<jwks_source> keys_;
  std::uint64_t id_; ///< this guard's key in each thread's cache (never reused)
};

} // namespace gather
