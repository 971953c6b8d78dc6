// Where a route's JWK set comes from: a file (read when the configuration generation is built: at
// start and on every reload) or a URL (fetched through the gateway's own downstream client at
// start, again once jwks_refresh_s have passed, and when a token names a kid the set lacks, at
// most once per kid_refetch_pace). A fetch that fails, or brings no usable key, keeps the last
// good set.
//
// The refresh needs no timer: the first check after jwks_refresh_s starts the fetch (one atomic
// compare per request), and the check goes on with the set in force. An idle gateway fetches
// nothing, and has nothing to check either.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <limits>
#include <string>
#include <vector>

#include "gather/admission/jwk_set.hpp"

namespace gather {

class downstream_client;

/// An unknown kid makes a URL fetch at most this often: a client sending made-up kids cannot
/// turn the gateway into a load generator against the identity provider.
constexpr std::chrono::seconds kid_refetch_pace{10};
/// One JWKS fetch, connect to last byte, and the largest set taken.
constexpr std::chrono::milliseconds jwks_fetch_timeout{5000};
constexpr std::size_t jwks_max_bytes = 1024 * 1024;

class jwks_source {
public:
  /// A file, read now; a file that cannot be read or holds no usable key leaves no set (logged).
  explicit jwks_source(const std::string& file);
  /// A URL; nothing is fetched until start().
  jwks_source(std::string url, std::chrono::seconds refresh);
  ~jwks_source();
  jwks_source(const jwks_source&) = delete;
  jwks_source& operator=(const jwks_source&) = delete;

  /// A URL source: the first fetch, through `client` (which must outlive this source's fetches:
  /// the gateway's client, stopped with the loops before the sources go). Idempotent.
  void start(downstream_client& client);
  /// A URL source: fetches again when jwks_refresh_s have passed since the last fetch began.
  /// Thread-safe; a relaxed atomic load when nothing is due.
  void refresh_if_due();

  /// The set in force; null while none was ever had. Takes a lock: callers keep a copy and ask
  /// again only when version() changed.
  std::shared_ptr<const jwk_set> keys() const;
  /// Changes with every set installed (0: none yet).
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  /// A token named a kid the set lacks: a URL source fetches again unless it did less than
  /// kid_refetch_pace ago. Thread-safe.
  void unknown_kid();

  /// For logs: the file or the URL.
  const std::string& origin() const { return origin_; }
  std::chrono::seconds refresh() const { return refresh_; }
  bool is_url() const { return url_; }
  /// Fetches made (a URL source), whatever their result: the tests' and the docs' witness.
  std::uint64_t fetches() const { return fetches_.load(); }

private:
  void install(std::shared_ptr<const jwk_set> keys);
  void fetch();
  void fetched(std::string body, bool ok, const std::string& detail);

  std::string origin_;
  bool url_ = false;
  std::chrono::seconds refresh_{300};
  std::atomic<downstream_client*> client_{nullptr};
  std::atomic<std::int64_t> next_refresh_ns_{std::numeric_limits<std::int64_t>::max()};
  mutable std::mutex mutex_; ///< guards keys_ only
  std::shared_ptr<const jwk_set> keys_;
  std::atomic<std::uint64_t> version_{0};
  std::atomic<bool> in_flight_{false};
  std::atomic<std::int64_t> last_kid_fetch_ns_{std::numeric_limits<std::int64_t>::min() / 2};
  std::atomic<std::uint64_t> fetches_{0};
};

/// The gateway's URL sources, one per (URL, refresh), kept across reloads so a reload neither
/// refetches nor loses the set; file sources are made anew for every generation. Made before the
/// gateway's client (the first generation is), destroyed after it.
class jwks_registry {
public:
  /// The source for a route's jwt config; a URL source starts fetching once start() was called.
  std::shared_ptr<jwks_source> source_for(const std::string& file, const std::string& url,
                                          std::chrono::seconds refresh);
  /// From now on URL sources fetch through `client` (those made before start now).
  void start(downstream_client& client);

private:
  std::mutex mutex_;
  downstream_client* client_ = nullptr;
  std::vector<std::shared_ptr<jwks_source>> urls_;
};

} // namespace gather
