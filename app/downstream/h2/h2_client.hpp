// The HTTP/2 client of one event loop (stream_call.hpp is its contract): its links per origin
// (h2_link.hpp) in the loop's pool (pool/loop_pool.hpp), one list per link state
// (link_machine.hpp), and its running calls, each
// from the link chosen or opened, through its events, to its one end: on its timer (timeout, the
// hedge's slow point), a cancel, a refused stream sent again elsewhere, or what its link reports.
// Only the loop's thread touches any of it. Private to app/downstream/.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "h2/h2_link.hpp"
#include "pool/loop_pool.hpp"

namespace gather::downstream_loop {

class h2_client {
public:
  h2_client(asio::io_context& loop, name_lookups& lookups, asio::ssl::context& tls, downstream_pool& pool)
    : loop_(loop), lookups_(lookups), tls_(tls), pool_(pool),
      deadlines_(loop, [this](std::uint64_t id, call_deadlines::step what) { came_due(id, what); }) {}
  /// The loop has stopped (or never ran): nothing runs any more, no event is delivered.
  ~h2_client();

  /// Starts a call, counted in flight by its ticket (none for a transfer's call: its collector
  /// holds the transfer's); its events run later, never inside.
  void start(std::uint64_t id, stream_request request, std::shared_ptr<stream_events> events, inflight_ticket ticket);
  /// A cancel: the stream is reset (CANCEL) and no event runs any more.
  void abandon(std::uint64_t id);
  /// A connection whose ALPN chose h2, made by the pool (h1_alpn.cpp), joins `where`'s links; the
  /// calls started next find it.
  void adopt(std::unique_ptr<origin_connection> conn, const origin_and_target& where);
  /// A link of the origin takes a call now (ready or connecting, with room): else a new
  /// connection is needed, and for https the pool makes it (its ALPN decides).
  bool takes_call(const std::string& key) const {
    const auto* origin = pool_.find(key);
    if (!origin)
      return false;
    for (const auto state : {link_state::ready, link_state::connecting})
      for (const auto& link : origin->h2[state])
        if (link->has_room())
          return true;
    return false;
  }

  // What the links report (h2_link.cpp).
  /// The call's end: it leaves the running set and its link, then on_end runs, last.
  void end(const std::shared_ptr<h2_call>& call, stream_end&& how);
  /// The server refused the call's stream unprocessed: sent again on another link, or ended
  /// `refused` after max_resends.
  void refused(const std::shared_ptr<h2_call>& call, const h2_link* from, std::string why);
  /// The call, never sent, goes to another link (not counted as a resend).
  void move(const std::shared_ptr<h2_call>& call, const h2_link* from) { place(call, from); }
  /// The link's state changed: it moves to that state's list (closed: the pool forgets it).
  void moved(h2_link& link, link_state from, link_state to);
  /// The link's last slot was freed.
  void idle(h2_link& link);
  /// The link's own connection to `key` (a gRPC call's) got http/1.1 or nothing by ALPN: the pool
  /// remembers it (downstream_alpn_memory_ms), and calls that would need a new link to it end at
  /// once instead of each asking again.
  void chose_h1(const std::string& key) { pool_.chose_h1(key, link_machine::clock::now()); }

private:
  void arm(const std::shared_ptr<h2_call>& call);
  /// A running call's slow point or timeout (call_deadlines.hpp).
  void came_due(std::uint64_t id, call_deadlines::step what);
  /// A link of the call's origin with room (not `exclude`), else a new one; then the call on it.
  void place(const std::shared_ptr<h2_call>& call, const h2_link* exclude);
  void fail_now(const std::shared_ptr<h2_call>& call, stream_ending how, std::string detail);
  /// Some endpoint left its upstream since the last look (retire_epoch.hpp): its links take no
  /// new stream and close when their streams have ended.
  void drain_retired();

  asio::io_context& loop_;
  name_lookups& lookups_;
  asio::ssl::context& tls_;
  downstream_pool& pool_; ///< the loop's: each origin's links, a list per state (closed ones dropped)
  std::unordered_map<std::uint64_t, std::shared_ptr<h2_call>> running_;
  std::uint64_t retire_seen_ = 0; ///< the retire_epoch() this loop's links last acted on
  call_deadlines deadlines_; ///< the running calls' (its due function reads running_)
};

/// The request's headers as a transfer's "Name: value\r\n" lines, for HTTP/2: names lower case,
/// the connection-specific ones and Host (that is :authority) left out.
header_list header_fields(const std::string& header_lines);

} // namespace gather::downstream_loop
