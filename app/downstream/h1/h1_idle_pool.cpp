// The HTTP/1.1 client's idle keep-alive pools (h1_client.hpp): a connection given back after an
// answer that keeps it alive, taken again by the next transfer to its pool key, closed after its
// idle bound by the pools' one timer, or at once when its upstream endpoint left or it is older
// than the upstream's max_connection_age_ms.
#include "h1/h1_client.hpp"

#include "pool/retire_epoch.hpp"

namespace gather::downstream_loop {

/// Idle keep-alive connections kept per loop, all origins together.
constexpr std::size_t max_idle_connections = 1024;

std::unique_ptr<origin_connection> h1_client::take_idle(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end() || it->second.empty())
    return nullptr;
  auto conn = std::move(it->second.back());
  it->second.pop_back();
  --idle_count_;
  return conn;
}

void h1_client::close_retired() {
  retire_seen_ = retire_epoch().load(std::memory_order_relaxed);
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& pool = it->second;
    const auto& endpoint = pool.empty() ? nullptr : pool.front()->endpoint;
    if (!endpoint || !endpoint->retired.load(std::memory_order_relaxed)) { // a pool is one endpoint's
      ++it;
      continue;
    }
    for (auto& conn : pool)
      conn->close();
    idle_count_ -= pool.size();
    it = idle_.erase(it);
  }
}

std::chrono::milliseconds h1_client::idle_timeout_of(const origin_connection& conn) const {
  return conn.endpoint ? conn.endpoint->bounds.idle_timeout : idle_timeout_;
}

void h1_client::give_back(std::unique_ptr<origin_connection> conn) {
  if (idle_count_ >= max_idle_connections)
    return conn->close();
  const auto now = std::chrono::steady_clock::now();
  if (const auto& endpoint = conn->endpoint) {
    const auto max_age = endpoint->bounds.max_age;
    if (endpoint->retired.load(std::memory_order_relaxed) || (max_age.count() > 0 && now - conn->born >= max_age))
      return conn->close(); // its endpoint left, or it is too old: no further call on it
  }
  ++idle_count_;
  conn->idle_since = now;
  const auto idle = idle_timeout_of(*conn);
  if (idle.count() == 0) { // never closed for idleness
    idle_[conn->key].push_back(std::move(conn));
    return;
  }
  const auto ends = conn->idle_since + idle;
  auto& pool = idle_[conn->key];
  pool.push_back(std::move(conn));
  sweep_later(ends);
}

void h1_client::sweep_later(std::chrono::steady_clock::time_point at) {
  if (sweep_at_ && *sweep_at_ <= at)
    return; // never, or a sweep comes first (it arms the next one)
  sweep_at_ = at;
  sweep_.expires_at(at);
  sweep_.async_wait([this](const error_code& ec) {
    if (!ec)
      sweep();
  });
}

void h1_client::sweep() {
  sweep_at_.reset();
  const auto now = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& pool = it->second;
    // A pool's connections share one idle bound (its key names the upstream, or none): oldest first.
    const auto idle = pool.empty() ? idle_timeout_ : idle_timeout_of(*pool.front());
    if (idle.count() == 0) {
      ++it;
      continue;
    }
    std::size_t old = 0;
    while (old < pool.size() && now - pool[old]->idle_since >= idle)
      pool[old++]->close();
    pool.erase(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(old));
    idle_count_ -= old;
    if (pool.empty()) {
      it = idle_.erase(it);
      continue;
    }
    const auto ends = pool.front()->idle_since + idle;
    if (!next || ends < *next)
      next = ends;
    ++it;
  }
  if (next)
    sweep_later(*next);
}

} // namespace gather::downstream_loop
