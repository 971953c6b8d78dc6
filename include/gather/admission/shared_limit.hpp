// A route's rate limit shared by every gateway of one store (docs/shared.md, "Shared rate
// limits"). Exact mode (sync_ms 0): each decision is one script call in the store, and a key
// refused there is refused locally until its next token is due. Approximate mode: each request is decided at once from the route's local bucket,
// which holds the shared count last seen plus this gateway's use since; every sync_ms the keys
// used are sent to the store in one script call, which adds them to the shared buckets (GCRA, the
// store's clock) and answers each bucket's state, which the local buckets then learn. Across G
// gateways at most about (G - 1) x (rate x sync + burst) more than the limit is admitted.
//
// While the store is down, requests are decided by a local bucket of rate/G and burst
// ceil(burst/G) (G as last seen), and nothing is sent.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gather/admission/rate_limiter.hpp"
#include "gather/config/config.hpp"
#include "gather/values/store_budget.hpp"

namespace gather {

class shared_store;

class shared_limit {
public:
  /// `route_path`: the bucket's key in the store is prefix, "rl:", route path, ":", hashed key.
  shared_limit(const rate_limit_config& cfg, const std::string& route_path,
               std::shared_ptr<shared_store> store);
  ~shared_limit();
  shared_limit(const shared_limit&) = delete;
  shared_limit& operator=(const shared_limit&) = delete;

  /// Decides at once for `key` when it can (any thread; no store round trip): always in
  /// approximate mode; in exact mode (sync_ms 0) when the store is down (the local bucket of
  /// rate/G) or when `key` is known over its limit (refused until its next token is due).
  /// nullopt: ask() the store.
  std::optional<rate_limiter::decision> take(std::string_view key,
                                             std::chrono::steady_clock::time_point now) const;

  /// Exact mode: one atomic decision in the store (one script, the store's clock; the decisions
  /// of one loop turn leave in one write). Call it on a loop's thread: `done` runs there once,
  /// within the store's timeout_ms; without the store's answer the local bucket of rate/G decides.
  void ask(const std::string& key, std::function<void(rate_limiter::decision)> done,
           const std::shared_ptr<store_budget>& budget) const;

  bool exact() const;

private:
  struct state;
  std::shared_ptr<state> state_; ///< also held, weakly, by the store's sync tick on loop 0
  std::shared_ptr<std::function<void()>> tick_;
};

} // namespace gather
