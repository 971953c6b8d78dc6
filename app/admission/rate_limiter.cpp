#include "gather/admission/rate_limiter.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "gather/admission/jwt.hpp"

namespace gather {

namespace {

struct mac_ctx_free {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

/// One SipHash context per thread, keyed once from the process's key.
class siphash {
public:
  siphash() {
    static const std::array<unsigned char, 16> key = [] {
      std::array<unsigned char, 16> k{};
      if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1)
        throw std::runtime_error("no random bytes for the rate limit's hash key");
      return k;
    }();
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
    ctx_.reset(mac ? EVP_MAC_CTX_new(mac) : nullptr);
    EVP_MAC_free(mac);
    std::size_t size = 8;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                           OSSL_PARAM_construct_end()};
    if (!ctx_ || EVP_MAC_init(ctx_.get(), key.data(), key.size(), params) != 1)
      throw std::runtime_error("OpenSSL has no SipHash");
    keyed_.reset(EVP_MAC_CTX_dup(ctx_.get()));
  }

  std::uint64_t operator()(std::string_view bytes) {
    // A keyed context copied over the working one: cheaper than keying again.
    std::unique_ptr<EVP_MAC_CTX, mac_ctx_free> work(EVP_MAC_CTX_dup(keyed_.get()));
    unsigned char out[8] = {};
    std::size_t length = 0;
    if (!work || EVP_MAC_update(work.get(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                bytes.size()) != 1 ||
        EVP_MAC_final(work.get(), out, &length, sizeof out) != 1)
      throw std::runtime_error("SipHash failed");
    std::uint64_t value = 0;
    for (unsigned char byte : out)
      value = (value << 8) | byte;
    return value;
  }

private:
  std::unique_ptr<EVP_MAC_CTX, mac_ctx_free> ctx_, keyed_;
};

} // namespace

std::uint64_t keyed_hash(std::string_view bytes) {
  thread_local siphash hash;
  return hash(bytes);
}

rate_limiter::rate_limiter(const rate_limit_config& cfg)
    : cfg_(cfg), ways_(std::min<std::size_t>(ways, std::max<std::size_t>(1, cfg.max_keys))) {
  sets_ = std::max<std::size_t>(1, cfg.max_keys / ways_);
  interval_ns_ = std::max<std::int64_t>(1, std::llround(1e9 / cfg.rate_per_s));
  tolerance_ns_ = static_cast<std::int64_t>(std::max(0.0, cfg.burst - 1)) * interval_ns_;
  slots_ = static_cast<slot*>(std::calloc(sets_ * ways_, sizeof(slot)));
  if (!slots_)
    throw std::bad_alloc();
}

rate_limiter::~rate_limiter() { std::free(slots_); }

rate_limiter::slot& rate_limiter::find_or_claim(std::uint64_t hash, std::int64_t now) const {
  slot* set = slots_ + (hash % sets_) * ways_;
  for (int round = 0; round < 2; ++round) {
    slot* oldest = set;
    slot* empty = nullptr;
    for (std::size_t i = 0; i < ways_; ++i) {
      const auto key = set[i].key.load(std::memory_order_acquire);
      if (key == hash)
        return set[i];
      if (key == 0 && !empty)
        empty = &set[i];
      if (set[i].used.load(std::memory_order_relaxed) < oldest->used.load(std::memory_order_relaxed))
        oldest = &set[i];
    }
    // Claim the first empty slot, else the least recently used one. Threads that meet a new key
    // at once then try the same slot (the first empty one does not depend on `used`, which the
    // winner changes), one wins, the others look again and find it; two buckets for one key
    // remain possible only while the set is full and churning. A loser looks again.
    slot& target = empty ? *empty : *oldest;
    std::uint64_t previous = target.key.load(std::memory_order_acquire);
    if (previous == hash)
      return target; // claimed for this key since the scan: claiming it again would reset it
    std::int64_t previous_tat = target.tat.load(std::memory_order_relaxed);
    if (target.key.compare_exchange_strong(previous, hash, std::memory_order_acq_rel)) {
      // The new key starts with a full bucket, unless a thread that found the key meanwhile
      // has already taken from it: resetting then would give that token back (one request too
      // many). Had the old key taken one between the two reads, the new key keeps that state:
      // rarely a bucket less full than it should be, never a token too many.
      target.tat.compare_exchange_strong(previous_tat, 0, std::memory_order_relaxed);
      target.used.store(now, std::memory_order_relaxed);
      return target;
    }
  }
  // Two lost races in a row: a set under heavy churn. Count against the first slot rather than
  // spin (a rare, one-request inaccuracy).
  return set[0];
}

rate_limiter::decision rate_limiter::take(std::string_view key,
                                          std::chrono::steady_clock::time_point at) const {
  // 0 marks an empty slot: a key never hashes to it.
  const std::uint64_t hash = std::max<std::uint64_t>(1, keyed_hash(key));
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  slot& bucket = find_or_claim(hash, now);
  bucket.used.store(now, std::memory_order_relaxed);
  std::int64_t tat = bucket.tat.load(std::memory_order_relaxed);
  for (;;) {
    const std::int64_t start = std::max(tat, now);
    if (start - now > tolerance_ns_) {
      // The next token arrives when start - tolerance is reached.
      const std::int64_t wait_ns = start - tolerance_ns_ - now;
      const auto seconds = std::max<std::int64_t>(1, (wait_ns + 999999999) / 1000000000);
      return {false, std::chrono::seconds{seconds}};
    }
    if (bucket.tat.compare_exchange_weak(tat, start + interval_ns_, std::memory_order_relaxed))
      return {true, std::chrono::seconds{0}};
  }
}

rate_limiter::decision rate_limiter::peek(std::string_view key,
                                          std::chrono::steady_clock::time_point at) const {
  const std::uint64_t hash = std::max<std::uint64_t>(1, keyed_hash(key));
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  const std::int64_t start = std::max(find_or_claim(hash, now).tat.load(std::memory_order_relaxed), now);
  if (start - now <= tolerance_ns_)
    return {true, std::chrono::seconds{0}};
  const std::int64_t wait_ns = start - tolerance_ns_ - now;
  return {false, std::chrono::seconds{std::max<std::int64_t>(1, (wait_ns + 999999999) / 1000000000)}};
}

void rate_limiter::raise(std::string_view key, std::chrono::steady_clock::time_point at,
                         std::chrono::steady_clock::time_point now_at) const {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  const std::uint64_t hash = std::max<std::uint64_t>(1, keyed_hash(key));
  const std::int64_t now = duration_cast<nanoseconds>(now_at.time_since_epoch()).count();
  const std::int64_t target = duration_cast<nanoseconds>(at.time_since_epoch()).count();
  slot& bucket = find_or_claim(hash, now);
  std::int64_t tat = bucket.tat.load(std::memory_order_relaxed);
  while (tat < target && !bucket.tat.compare_exchange_weak(tat, target, std::memory_order_relaxed)) {
  }
}

std::string rate_limit_key(const rate_limit_config& cfg, std::string_view peer_address,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const nlohmann::json* claims) {
  switch (cfg.per) {
    case rate_limit_config::key_kind::ip:
      return std::string(peer_address);
    case rate_limit_config::key_kind::header:
      for (const auto& [name, value] : headers)
        if (name == cfg.name)
          return value;
      return {};
    case rate_limit_config::key_kind::claim:
      return claims ? claim_text(*claims, cfg.name) : std::string{};
    case rate_limit_config::key_kind::route:
      break;
  }
  return {};
}

} // namespace gather
