// The HTTP/1.1 client's ready lists (h1_client.hpp): a connection given back after an answer that
// keeps it alive, taken again by the next transfer to its pool key, closed when its link machine
// says (h1_link.hpp): at once when it drains (its upstream endpoint left, it is older than the
// upstream's max_connection_age_ms, the answer did not allow reuse), or after its idle bound, by
// the lists' one timer.
#include "h1/h1_client.hpp"

#include "gather/downstream/h1/h1_link.hpp"
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
    for (auto& conn : pool) {
      conn->link.lost();
      conn->close();
    }
    idle_count_ -= pool.size();
    it = idle_.erase(it);
  }
}

void h1_client::give_back(std::unique_ptr<origin_connection> conn, bool reusable) {
  const auto now = link_machine::clock::now();
  const auto& endpoint = conn->endpoint;
  const bool left = endpoint && endpoint->retired.load(std::memory_order_relaxed);
  const bool ready = h1_link::answered(conn->link, reusable, left, now);
  if (!ready || idle_count_ >= max_idle_connections) {
    conn->link.lost();
    return conn->close();
  }
  ++idle_count_;
  const auto next = conn->link.next_check(); // its idle bound or its age; none: kept while it lives
  idle_[conn->key].push_back(std::move(conn));
  if (next)
    sweep_later(*next);
}

void h1_client::sweep_later(std::chrono::steady_clock::time_point at) {
  if (sweep_at_ && *sweep_at_ <= at)
    return; // a sweep comes first (it arms the next one)
  sweep_at_ = at;
  sweep_.expires_at(at);
  sweep_.async_wait([this](const error_code& ec) {
    if (!ec)
      sweep();
  });
}

void h1_client::sweep() {
  sweep_at_.reset();
  const auto now = link_machine::clock::now();
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& pool = it->second;
    std::size_t kept = 0; // the ones not due stay, in their order
    for (auto& conn : pool) {
      if (conn->link.due(now) != link_due::nothing || conn->link.state() != link_state::ready) {
        conn->link.lost();
        conn->close();
        continue;
      }
      if (const auto at = conn->link.next_check(); at && (!next || *at < *next))
        next = at;
      if (&pool[kept] != &conn)
        pool[kept] = std::move(conn);
      ++kept;
    }
    idle_count_ -= pool.size() - kept;
    pool.resize(kept);
    if (pool.empty())
      it = idle_.erase(it);
    else
      ++it;
  }
  if (next)
    sweep_later(*next);
}

} // namespace gather::downstream_loop
