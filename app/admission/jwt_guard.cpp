#include "gather/admission/jwt_guard.hpp"

#include <atomic>
#include <string>
#include <unordered_map>

namespace gather {

namespace {

/// What one thread keeps for one guard.
struct thread_cache {
  std::uint64_t version = 0;
  std::shared_ptr<const jwk_set> keys;
  std::unordered_map<std::string, std::shared_ptr<const nlohmann::json>> verified;
  std::size_t token_bytes = 0; ///< of the tokens in `verified`
};

/// Per thread, per guard; guards of old generations are dropped all at once past this many.
constexpr std::size_t guards_per_thread = 32;

thread_cache& cache_for(std::uint64_t guard) {
  thread_local std::unordered_map<std::uint64_t, thread_cache> caches;
  if (caches.size() >= guards_per_thread && !caches.count(guard))
    caches.clear();
  return caches[guard];
}

std::atomic<std::uint64_t> next_guard_id{1};

} // namespace

jwt_guard::jwt_guard(jwt_config cfg, std::shared_ptr<jwks_source> keys)
    : cfg_(std::move(cfg)), keys_(std::move(keys)), id_(next_guard_id.fetch_add(1)) {}

auth_outcome jwt_guard::check(std::string_view authorization, double now) const {
  const auto token = bearer_token(authorization);
  if (token.empty())
    return {jwt_failure::missing, false, nullptr};
  keys_->refresh_if_due();
  auto& cache = cache_for(id_);
  if (const auto version = keys_->version(); version != cache.version) {
    cache.keys = keys_->keys();
    cache.version = version;
    cache.verified.clear();
    cache.token_bytes = 0;
  }
  if (!cache.keys)
    return {jwt_failure::none, true, nullptr};
  std::shared_ptr<const nlohmann::json> claims;
  if (const auto hit = cache.verified.find(std::string(token)); hit != cache.verified.end()) {
    claims = hit->second;
  } else {
    auto verified = verify_signature(token, *cache.keys);
    if (verified.failure != jwt_failure::none) {
      if (verified.failure == jwt_failure::kid)
        keys_->unknown_kid();
      return {verified.failure, false, nullptr};
    }
    if (cache.verified.size() >= verified_tokens_per_thread ||
        cache.token_bytes + token.size() > verified_token_bytes_per_thread) {
      cache.verified.clear();
      cache.token_bytes = 0;
    }
    cache.token_bytes += token.size();
    claims = cache.verified.emplace(std::string(token), std::move(verified.claims)).first->second;
  }
  const auto failure = check_claims(*claims, cfg_, now);
  return {failure, false, failure == jwt_failure::none ? std::move(claims) : nullptr};
}

} // namespace gather
