// The calls' timers of one loop's client (h1_client.hpp, h2_client.hpp): one Asio timer, armed at
// the earliest point any running call comes due, and an ordered set of those points, each a call's
// id and its step (its hedge's slow point, then its timeout). A call that ends leaves the set; the
// timer stays where it is and, should it fire for nothing, re-arms at the new earliest point.
//
// Why not an Asio timer per call: each was a service look-up under the registry's lock when made,
// a lock and a heap operation to arm and again to cancel, and a posted completion with
// operation_aborted when the call ended: ~750 instructions a call that answers in time
// (bench/callgrind.sh 4 200). Calls with the same timeout come due in the order they started, so
// the timer moves only when the set was empty or a shorter timeout came. Only the loop's thread
// touches it; public for its unit tests (tests/downstream/call/call_deadlines_test.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace gather::downstream_loop {

class call_deadlines {
public:
  using clock = std::chrono::steady_clock;
  enum class step : std::uint8_t { slow, timeout };
  /// A call's place in the set: when, which call, which step.
  using entry = std::tuple<clock::time_point, std::uint64_t, step>;
  /// Runs on the loop for each entry that came due, already out of the set; the client finds the
  /// call by its id (gone: it ended) and takes the step (came_due below).
  using due_fn = std::function<void(std::uint64_t id, step what)>;

  call_deadlines(boost::asio::io_context& loop, due_fn due) : timer_(loop), due_(std::move(due)) {}

  entry add(clock::time_point at, std::uint64_t id, step what) {
    entry e{at, id, what};
    entries_.insert(e);
    if (!firing_ && (!armed_ || at < *armed_)) // (while firing, the earliest is armed after)
      arm(at);
    return e;
  }

  void drop(const std::optional<entry>& e) {
    if (e)
      entries_.erase(*e);
  }

private:
  void arm(clock::time_point at) {
    armed_ = at;
    timer_.expires_at(at); // a wait pending for a later point ends operation_aborted
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) // (aborted: re-armed, or the client is going; `this` may be gone then)
        fired();
    });
  }

  void fired() {
    armed_.reset();
    firing_ = true;
    const auto now = clock::now();
    while (!entries_.empty() && std::get<0>(*entries_.begin()) <= now) {
      const auto [at, id, what] = *entries_.begin();
      entries_.erase(entries_.begin());
      due_(id, what); // may add (a timeout after a slow point) or drop entries
    }
    firing_ = false;
    if (!entries_.empty())
      arm(std::get<0>(*entries_.begin()));
  }

  boost::asio::steady_timer timer_;
  due_fn due_;
  std::set<entry> entries_;
  std::optional<clock::time_point> armed_; ///< where the timer's wait is, while there is one
  bool firing_ = false; ///< in fired(): entries added now are armed once it is done
};

/// What a call holds for its deadlines (a call type has `id`, `finished` and one of these as `due`).
struct call_due {
  std::optional<call_deadlines::entry> entry; ///< its place in the set while it has one
  call_deadlines::clock::time_point timeout_at;
  std::function<void()> slow; ///< run once at the slow point, when there is one
};

/// Enters `call`: `slow` runs once after `slow_after` (0: never; only if shorter than `timeout`),
/// then its timeout comes after the rest of `timeout`.
template <class Call>
void arm_call(call_deadlines& deadlines, Call& call, std::chrono::microseconds timeout,
              std::chrono::microseconds slow_after, std::function<void()> slow) {
  const auto now = call_deadlines::clock::now();
  call.due.timeout_at = now + timeout;
  if (slow && slow_after.count() > 0 && slow_after < timeout) {
    call.due.slow = std::move(slow);
    call.due.entry = deadlines.add(now + slow_after, call.id, call_deadlines::step::slow);
  } else {
    call.due.entry = deadlines.add(call.due.timeout_at, call.id, call_deadlines::step::timeout);
  }
}

/// The call ended (or left this client): its entry leaves the set.
template <class Call>
void disarm_call(call_deadlines& deadlines, Call& call) {
  deadlines.drop(call.due.entry);
  call.due.entry.reset();
}

/// `call`'s entry came due: at the slow point its timeout is entered and `slow` runs; at the
/// timeout `timed_out` runs. Neither once the call is finished.
template <class Call, class TimedOut>
void came_due(call_deadlines& deadlines, Call& call, call_deadlines::step what, TimedOut timed_out) {
  call.due.entry.reset();
  if (call.finished)
    return;
  if (what == call_deadlines::step::timeout)
    return timed_out();
  call.due.entry = deadlines.add(call.due.timeout_at, call.id, call_deadlines::step::timeout);
  if (auto slow = std::exchange(call.due.slow, nullptr))
    slow();
}

} // namespace gather::downstream_loop
