// An HTTP/2 connection (h2_connection.hpp), its timers: each stream's (a request begun and never
// finished, the request's deadline and hard limit, an answer the client does not take) and the
// connection's (idle, a write that never drains, the linger at its end).
#pragma once

#include "h2_connection.hpp"

namespace gather {

template <class Stream>
inline void h2_connection<Stream>::arm(std::int32_t id, h2_stream& s, clock::time_point at, why reason) {
  s.timer_why = reason;
  const bool sooner = at < s.timer_at;
  s.timer_at = at;
  if (!sooner && s.timer_armed)
    return; // the pending wait fires earlier and re-arms itself
  s.timer_armed = true;
  s.timer.expires_at(at);
  s.timer.async_wait([self = this->shared_from_this(), id](const error_code& ec) {
    if (!ec)
      self->on_stream_timer(id);
  });
}

template <class Stream>
inline void h2_connection<Stream>::on_stream_timer(std::int32_t id) {
  auto* s = find(id);
  if (closed_ || !s)
    return;
  s->timer_armed = false;
  if (clock::now() < s->timer_at)
    return arm(id, *s, s->timer_at, s->timer_why);
  switch (s->timer_why) {
    case why::incomplete: // a request begun and never finished: a slow stream
      if (s->at == stage::head || s->at == stage::body)
        return end_for(h2_abuse::incomplete_stream);
      return;
    case why::deadline:
      if (s->started)
        shared_.dispatch.deadline_passed(*s->started);
      if (s->started)
        arm(id, *s, s->started->hard_limit, why::hard_limit);
      return;
    case why::hard_limit:
      if (s->at == stage::streaming) { // a progressive answer that never ended: cut it off
        stop_stream(*s);
        session_->reset(id, h2_code::internal_error);
        return flush();
      }
      if (s->started && s->sink && s->sink->claim()) {
        auto reply = shared_.dispatch.give_up(*s->started, s->sink->record(), false);
        return answer(id, *s, std::move(reply));
      }
      return;
    case why::sending: // the answer was not taken: the client does not read its window
      return end_for(h2_abuse::stalled);
    case why::none:
      return;
  }
}

template <class Stream>
inline auto h2_connection<Stream>::connection_due() const -> clock::time_point {
  if (ending_)
    return ending_at_;
  auto at = clock::time_point::max();
  if (writing_)
    at = write_began_ + limits().request_timeout;
  if (streams_.empty())
    at = std::min(at, last_activity_ + limits().keep_alive_idle);
  return at;
}

template <class Stream>
inline void h2_connection<Stream>::arm_connection_timer() {
  const auto at = connection_due();
  if (at == clock::time_point::max() || (timer_armed_ && timer_at_ <= at))
    return;
  timer_armed_ = true;
  timer_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = this->shared_from_this()](const error_code& ec) {
    if (!ec)
      self->on_connection_timer();
  });
}

template <class Stream>
inline void h2_connection<Stream>::on_connection_timer() {
  timer_armed_ = false;
  if (closed_)
    return;
  const auto now = clock::now();
  if (now < connection_due())
    return arm_connection_timer();
  if (ending_)
    return close();
  if (writing_ && now >= write_began_ + limits().request_timeout) {
    shared_.stats.h2_abuse[static_cast<int>(h2_abuse::stalled)].fetch_add(1, std::memory_order_relaxed);
    return close(); // the socket takes nothing: no GOAWAY could reach the client either
  }
  drain(); // idle: GOAWAY, then closed
  arm_connection_timer();
}

} // namespace gather
