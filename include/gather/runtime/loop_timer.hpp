// A one-shot timer on an event loop, armed and cancelled by the actor that owns it.
//
// Why not CAF's delayed_send: that is an entry on CAF's clock thread (a lock and often a thread
// wake-up) that cannot be cancelled and holds a strong reference to its receiver until it fires,
// so an idle hedge delay of 400 ms kept every worker alive for 400 ms and cost S1 a third more
// CPU (docs/performance.md). This timer lives in the loop's timer queue, which the loop polls
// anyway; cancelling it costs nothing more, and it holds only a callback.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace gather {

class loop_timer {
public:
  loop_timer() = default;
  ~loop_timer() { cancel(); }
  loop_timer(const loop_timer&) = delete;
  loop_timer& operator=(const loop_timer&) = delete;

  /// Runs `fire` on `loop` after `delay`, unless cancel() (or another arm()) comes first.
  void arm(boost::asio::io_context& loop, std::chrono::microseconds delay, std::function<void()> fire);
  /// Thread-safe with respect to the loop: from another thread the cancellation is posted to it.
  void cancel();

private:
  struct pending;
  std::shared_ptr<pending> pending_;
};

} // namespace gather
