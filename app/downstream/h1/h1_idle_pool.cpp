// The HTTP/1.1 client's ready links in the loop's pool (origin_pool.hpp): a connection given back
// after an answer that keeps it alive, taken again by the next transfer to its pool key, closed
// when its link machine says (h1_link.hpp): at once when it drains (its upstream endpoint left, it
// is older than the upstream's max_connection_age_ms, the answer did not allow reuse), when the
// loop holds downstream_max_idle_connections already, or after its idle bound, by one timer.
#include "h1/h1_client.hpp"

#include "gather/downstream/h1/h1_link.hpp"
#include "pool/retire_epoch.hpp"

namespace gather::downstream_loop {

namespace {

void close_link(origin_connection& conn) {
  conn.link.lost();
  conn.close();
}

} // namespace

void h1_client::close_retired() {
  retire_seen_ = retire_epoch().load(std::memory_order_relaxed);
  pool_.sweep_h1(
      [](std::unique_ptr<origin_connection>& conn) {
        if (!conn->endpoint || !conn->endpoint->retired.load(std::memory_order_relaxed))
          return true;
        close_link(*conn);
        return false;
      },
      link_machine::clock::now());
}

void h1_client::give_back(std::unique_ptr<origin_connection> conn, bool reusable) {
  const auto now = link_machine::clock::now();
  const auto& endpoint = conn->endpoint;
  const bool left = endpoint && endpoint->retired.load(std::memory_order_relaxed);
  if (!h1_link::answered(conn->link, reusable, left, now))
    return close_link(*conn);
  const auto next = conn->link.next_check(); // its idle bound or its age; none: kept while it lives
  const auto& key = conn->key;
  if (!pool_.give_back_h1(key, conn))
    return close_link(*conn); // (still ours: the loop holds downstream_max_idle_connections)
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
  pool_.sweep_h1(
      [&](std::unique_ptr<origin_connection>& conn) {
        if (conn->link.due(now) != link_due::nothing || conn->link.state() != link_state::ready) {
          close_link(*conn);
          return false;
        }
        if (const auto at = conn->link.next_check(); at && (!next || *at < *next))
          next = at;
        return true;
      },
      now);
  if (next)
    sweep_later(*next);
}

} // namespace gather::downstream_loop
