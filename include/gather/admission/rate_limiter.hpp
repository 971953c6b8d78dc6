// A route's rate limit (docs/security.md, "Who may come in"): a token bucket per client key, kept
// as GCRA (one "theoretical arrival time" per key, updated with one compare-and-swap), in a table
// of fixed size allocated once: memory does not grow whatever keys clients send.
//
// The table is set-associative: a key's hash picks a set of `ways` slots; a key not in its set
// takes the set's least recently used slot (the bucket it held is forgotten: its next request
// starts with a full bucket). Every request touches only atomics: no lock is shared between the
// event loops. Keys are hashed with SipHash under a key drawn at start (OpenSSL), so a client
// cannot choose values that land in another client's bucket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

namespace gather {

class rate_limiter {
public:
  static constexpr std::size_t ways = 8;

  explicit rate_limiter(const rate_limit_config& cfg);
  ~rate_limiter();
  rate_limiter(const rate_limiter&) = delete;
  rate_limiter& operator=(const rate_limiter&) = delete;

  struct decision {
    bool allowed = true;
    std::chrono::seconds retry_after{0}; ///< when refused: whole seconds until a token, >= 1
  };

  /// Takes one token from `key`'s bucket at `now`. Thread-safe, lock-free (const: the buckets are
  /// atomics the limiter points at, not part of its value).
  decision take(std::string_view key, std::chrono::steady_clock::time_point now) const;

  /// What take() would decide for `key` at `now`, without taking: a shared limit in exact mode
  /// refuses locally with it until the next token the store gave it is due (docs/shared.md).
  decision peek(std::string_view key, std::chrono::steady_clock::time_point now) const;

  /// What the bucket of `key` holds when a shared limit learns it from the store
  /// (docs/shared.md): its theoretical arrival time becomes at least `tat` (never earlier: a
  /// bucket learns of other gateways' use, it is never refilled by it).
  void raise(std::string_view key, std::chrono::steady_clock::time_point tat,
             std::chrono::steady_clock::time_point now) const;
  std::chrono::nanoseconds interval() const { return std::chrono::nanoseconds(interval_ns_); }

  /// Slots in the table (at most max_keys).
  std::size_t capacity() const { return sets_ * ways_; }
  const rate_limit_config& config() const { return cfg_; }

private:
  struct slot {
    std::atomic<std::uint64_t> key;  ///< the key's hash, 0: empty
    std::atomic<std::int64_t> tat;   ///< GCRA's theoretical arrival time, ns (0: a full bucket)
    std::atomic<std::int64_t> used;  ///< last use, ns: the eviction order
  };
  slot& find_or_claim(std::uint64_t hash, std::int64_t now) const;

  rate_limit_config cfg_;
  std::size_t sets_;
  std::size_t ways_;
  std::int64_t interval_ns_;  ///< one token's worth of time: 1 / rate_per_s
  std::int64_t tolerance_ns_; ///< (burst - 1) intervals
  slot* slots_;               ///< calloc'd: untouched pages cost no memory
};

/// The key a request counts under: the client's address (`ip`: the peer, or through trusted_proxies), a header's first value
/// (`header:NAME`), a claim's text (`claim:NAME`), or "" (`route`, or a request without the
/// header or claim: those share one bucket). `headers`: the request's, names lower-case;
/// `claims`: the verified token's (null on a route without auth).
std::string rate_limit_key(const rate_limit_config& cfg, std::string_view peer_address,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const nlohmann::json* claims);

/// SipHash-2-4 of `bytes` under this process's random key (OpenSSL's EVP_MAC).
std::uint64_t keyed_hash(std::string_view bytes);

} // namespace gather
