// A pooled link's states and capacity (link_machine.hpp): the facts go in through its events, one
// function turns them into the state, and due() into what the link must do at a given time.
#include "gather/downstream/pool/link_machine.hpp"

#include <algorithm>

namespace gather {

const char* to_string(link_state state) {
  switch (state) {
    case link_state::connecting: return "connecting";
    case link_state::ready: return "ready";
    case link_state::busy: return "busy";
    case link_state::draining: return "draining";
    case link_state::closed: return "closed";
  }
  return "?";
}

void link_machine::settle(time_point now) {
  note_idle(now);
  if (state_ == link_state::ready || state_ == link_state::busy)
    to(in_use() < limit_ ? link_state::ready : link_state::busy);
}

void link_machine::to(link_state next) {
  if (next == state_)
    return;
  // Connecting leads to ready, busy, draining or closed; draining only to closed; closed is last.
  const auto from = state_;
  if (from == link_state::closed || (from == link_state::draining && next != link_state::closed) ||
      next == link_state::connecting)
    return;
  state_ = next;
  if (on_change_)
    on_change_(from, next);
}

void link_machine::settings(std::uint32_t max_streams, time_point now) {
  limit_ = max_streams;
  if (state_ == link_state::connecting)
    to(link_state::ready); // then busy, if the streams already counted fill it
  settle(now);
}

void link_machine::wait_added() {
  ++waiting_;
  idle_since_.reset();
}

void link_machine::wait_removed(time_point now) {
  if (waiting_ > 0)
    --waiting_;
  settle(now);
}

void link_machine::opened(std::int32_t stream_id) {
  if (open_.empty() || open_.back() < stream_id)
    open_.push_back(stream_id);
  else if (const auto at = std::lower_bound(open_.begin(), open_.end(), stream_id); *at != stream_id)
    open_.insert(at, stream_id);
  idle_since_.reset();
  if (state_ == link_state::ready && in_use() >= limit_)
    to(link_state::busy);
}

bool link_machine::forget(std::int32_t stream_id) {
  const auto at = std::lower_bound(open_.begin(), open_.end(), stream_id);
  if (at == open_.end() || *at != stream_id)
    return false;
  open_.erase(at);
  return true;
}

void link_machine::ended(std::int32_t stream_id, time_point now) {
  forget(stream_id);
  settle(now);
}

void link_machine::reset(std::int32_t stream_id, time_point now) {
  if (!forget(stream_id))
    return;
  if (state_ == link_state::draining || state_ == link_state::closed)
    return; // no stream will be opened on it again: nothing to hold the slot for
  ++held_;
  if (held_ * 2 >= limit_)
    drain(now); // the connection's close frees them on the server
}

void link_machine::goaway(std::int32_t, time_point now) {
  // The streams above the last id are ended by the session (ended(), each one refused); the ones
  // at or below are counted until the server finishes them or the quiet bound passes.
  last_frame_ = now;
  drain(now);
  goaway_ = state_ == link_state::draining;
}

void link_machine::drain(time_point now) {
  if (state_ == link_state::closed || state_ == link_state::draining)
    return;
  last_frame_ = std::max(last_frame_, now); // the quiet bound counts from the drain
  held_ = 0;
  to(link_state::draining);
}

void link_machine::lost() {
  held_ = 0;
  to(link_state::closed);
}

link_due link_machine::due(time_point now) {
  settle(now);
  if (bounds_.max_age.count() > 0 && now - born_ >= bounds_.max_age &&
      (state_ == link_state::ready || state_ == link_state::busy))
    drain(now); // too old: no new stream; it closes when its streams have ended
  switch (state_) {
    case link_state::draining:
      if (open_.empty() && waiting_ == 0)
        return link_due::drained;
      return goaway_ && now - last_frame_ >= bounds_.drain_quiet ? link_due::quiet : link_due::nothing;
    case link_state::ready:
      if (in_use() == 0 && bounds_.idle_timeout.count() > 0 && idle_since_ && now - *idle_since_ >= bounds_.idle_timeout)
        return link_due::idle;
      return link_due::nothing;
    default:
      return link_due::nothing;
  }
}

std::optional<link_machine::time_point> link_machine::next_check() const {
  std::optional<time_point> next;
  const auto earliest = [&](time_point t) {
    if (!next || t < *next)
      next = t;
  };
  switch (state_) {
    case link_state::closed:
      return std::nullopt;
    case link_state::draining:
      if (open_.empty() && waiting_ == 0)
        earliest(last_frame_);
      else if (goaway_)
        earliest(last_frame_ + bounds_.drain_quiet);
      return next; // a retired link's streams end by themselves (their call's timeout at worst)
    default:
      break;
  }
  if (state_ == link_state::ready && idle_since_ && bounds_.idle_timeout.count() > 0)
    earliest(*idle_since_ + bounds_.idle_timeout);
  if (bounds_.max_age.count() > 0 && (state_ == link_state::ready || state_ == link_state::busy))
    earliest(born_ + bounds_.max_age);
  return next;
}

} // namespace gather
