// A call's one timer, as both clients of a loop arm it (h1_client.hpp, h2_client.hpp): the hedge's
// slow point first, when it comes before the timeout, then the rest of the timeout. Defined once:
// a call that answers in time costs one timer and no wake-up. Private to app/downstream/.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/steady_timer.hpp>

namespace gather::downstream_loop {

/// Arms `call->timer` (a call with `timer` and `finished`): `slow` runs once after `slow_after`
/// (0: never; only if shorter than `timeout`), then `timed_out` after the rest of `timeout`,
/// neither once the call is finished. The handlers hold the call.
template <class Call, class TimedOut>
void arm_call_timer(const std::shared_ptr<Call>& call, std::chrono::microseconds timeout,
                    std::chrono::microseconds slow_after, std::function<void()> slow, TimedOut timed_out) {
  auto fire = [call, timed_out](const boost::system::error_code& ec) {
    if (!ec && !call->finished)
      timed_out();
  };
  if (slow && slow_after.count() > 0 && slow_after < timeout) {
    call->timer.expires_after(slow_after);
    call->timer.async_wait([call, rest = timeout - slow_after, fire, slow = std::move(slow)](
                               const boost::system::error_code& ec) {
      if (ec || call->finished)
        return;
      call->timer.expires_after(rest);
      call->timer.async_wait(fire);
      slow();
    });
    return;
  }
  call->timer.expires_after(timeout);
  call->timer.async_wait(fire);
}

} // namespace gather::downstream_loop
