// The life and the capacity of one pooled downstream connection (a "link"), without its socket:
// what an HTTP/2 link (app/downstream/h2/h2_link.hpp) asks before it opens a stream, and what its pool
// reads to choose a link. Named states, one list per state in the pool, one transition function
// (as Envoy's ActiveClient::State): the link's events go in, its state and what is due come out.
// Time is passed in, so every transition is a unit test without a socket.
//
// Capacity is the server's, as far as the gateway can know it. A stream counts from the moment it
// is queued until the server ended it (END_STREAM, RST_STREAM, a refusal): then its slot is free.
// A stream the gateway reset (a cancel, a timeout, a consumer that stopped) keeps its slot for as
// long as the connection lives, because nothing says when the server let it go: nginx 1.22 still
// counted 128 reset streams 12 s later, PING answered or not, and refused every new stream beyond
// http2_max_concurrent_streams (docs/performance.md, "The churn fix"). A link that holds half its
// limit in such slots is retired (draining): its open streams finish, then it closes, and the
// server forgets the reset streams with the connection; new calls go to a fresh link.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace gather {

enum class link_state {
  connecting, ///< no transport yet, or no SETTINGS from the server yet: streams wait in the link
  ready,      ///< takes a new stream
  busy,       ///< every slot counted (open, waiting, or reset and not yet freed)
  draining,   ///< GOAWAY received or sent (or the gateway retired it): no new stream, ever
  closed,     ///< the transport is gone; the pool forgets it
};

const char* to_string(link_state state);

/// What the pool's bounds make of a link (docs/config.md: downstream_idle_timeout_ms,
/// downstream_drain_quiet_ms).
struct link_bounds {
  /// A link with no stream for this long is closed; 0: never.
  std::chrono::milliseconds idle_timeout{60000};
  /// A link draining after the server's GOAWAY whose open streams got no frame for this long is
  /// closed (its calls end as a connection failure).
  std::chrono::milliseconds drain_quiet{1000};
  /// A link older than this takes no new stream (it drains, then closes); 0: no limit (an
  /// upstream's max_connection_age_ms).
  std::chrono::milliseconds max_age{0};
};

/// What is due on a link at a given time (link_machine::due).
enum class link_due {
  nothing,
  idle,    ///< ready, no stream for idle_timeout: close it (GOAWAY, then the socket)
  drained, ///< draining and no stream left: close it
  quiet,   ///< draining after GOAWAY, its open streams without a frame for drain_quiet: close it now
};

class link_machine {
public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;
  /// Every transition, after the state changed (the pool moves the link between its lists).
  using observer = std::function<void(link_state from, link_state to)>;

  /// Streams a server allows before its SETTINGS say (RFC 9113 recommends no fewer than 100).
  static constexpr std::uint32_t assumed_streams = 100;

  link_machine(link_bounds bounds, time_point now) : bounds_(bounds), born_(now), last_frame_(now), idle_since_(now) {}
  void watch(observer on_change) { on_change_ = std::move(on_change); }

  link_state state() const { return state_; }
  /// Slots counted: open streams, calls waiting for the server's SETTINGS, reset streams held.
  std::size_t in_use() const { return open_.size() + waiting_ + held_; }
  std::size_t open_streams() const { return open_.size(); }
  std::size_t held_slots() const { return held_; }
  std::uint32_t limit() const { return limit_; }
  /// A new call may go on this link now (connecting with room for it to wait, or ready).
  bool takes_stream() const {
    return (state_ == link_state::connecting || state_ == link_state::ready) && in_use() < limit_;
  }

  // The link's events, in the order they happen on it.
  /// The server's SETTINGS (the first or a later one): its MAX_CONCURRENT_STREAMS.
  void settings(std::uint32_t max_streams, time_point now);
  /// A call queued before the SETTINGS came, or one that left the queue (sent, or gone).
  void wait_added();
  void wait_removed(time_point now);
  /// A stream opened (HEADERS queued) with this id.
  void opened(std::int32_t stream_id);
  /// The server ended the stream (END_STREAM both ways, RST_STREAM, a refusal, above a GOAWAY's
  /// last stream id): its slot is free.
  void ended(std::int32_t stream_id, time_point now);
  /// The gateway reset the stream: its slot stays held while the connection lives; at half the
  /// limit held, the link is retired (draining).
  void reset(std::int32_t stream_id, time_point now);
  /// Any frame from the server (the quiet bound of a draining link restarts).
  void frame(time_point now) { last_frame_ = now; }
  /// GOAWAY from the server: streams above `last_stream_id` are the session's to end (refused);
  /// the ones at or below it are the server's to finish.
  void goaway(std::int32_t last_stream_id, time_point now);
  /// The gateway retires the link (GOAWAY sent, too many held slots, older than max_age, or its transport
  /// never answered): its open streams finish, with no quiet bound.
  void drain(time_point now);
  /// The transport is gone.
  void lost();

  /// What is due at `now`.
  link_due due(time_point now);
  /// When due() should be asked next (nothing: only an event can make something due).
  std::optional<time_point> next_check() const;

private:
  /// The one transition function: the state the facts call for, told to the observer.
  void settle(time_point now);
  void to(link_state next);
  /// Since when no slot is counted (nothing while one is).
  void note_idle(time_point now) {
    if (in_use() > 0)
      idle_since_.reset();
    else if (!idle_since_)
      idle_since_ = now;
  }

  link_bounds bounds_;
  link_state state_ = link_state::connecting;
  std::uint32_t limit_ = assumed_streams;
  /// The open streams' ids, ascending (a client's ids only grow, so an open is an append): kept in a
  /// vector, whose room stays, so a link of capacity 1 (HTTP/1.1) allocates nothing per request.
  std::vector<std::int32_t> open_;
  /// Takes `stream_id` out of open_; false when it was not there.
  bool forget(std::int32_t stream_id);
  std::size_t waiting_ = 0;
  std::size_t held_ = 0;        ///< reset by the gateway, never known to be freed
  bool goaway_ = false;         ///< draining because the server said GOAWAY: the quiet bound applies
  time_point born_;             ///< against bounds_.max_age
  time_point last_frame_;
  std::optional<time_point> idle_since_;
  observer on_change_;
};

} // namespace gather
