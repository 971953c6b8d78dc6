// CAF's scheduler replaced by the event loops: every actor of the gateway runs on the io_threads
// loops, beside the connections and the downstream sockets.
//
// With CAF's own scheduler a request crossed threads at every step (front -> CAF worker -> curl
// -> CAF worker -> front), each crossing a futex or eventfd wake-up: on this machine context
// switches were the largest cost per request (docs/performance.md). On the loops an actor
// spawned or messaged from a loop runs on that same loop, after the handler that woke it, so a
// request's coordinator, workers, calls and answer stay on one thread with no hand-off at all.
// Work from elsewhere (the middleman, CAF's clock, the main thread) goes to the loops in turn.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <thread>
#include <unordered_set>

#include <caf/detail/thread_safe_actor_clock.hpp>
#include <caf/config.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>

#include "gather/runtime/io_loops.hpp"

namespace gather {

// quiet_clock overrides the virtual functions of a CAF 0.17 detail class, which another CAF
// release may change without notice: check them against that release before moving the bound.
#if CAF_VERSION < 1700 || CAF_VERSION >= 1800
#error "quiet_clock is written against caf::detail::thread_safe_actor_clock of CAF 0.17"
#endif

/// CAF's clock thread, told of an ending actor only when that actor ever set a timeout. CAF's own
/// clock takes every actor's cancel_timeouts() on its end as an event for its thread: a thread
/// wake-up per actor, per request several. Gather's request path sets no timeouts (the deadline
/// comes from the front's timer), so here those calls end in a lookup.
class quiet_clock final : public caf::detail::thread_safe_actor_clock {
public:
  void set_ordinary_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                            uint64_t id) override;
  void set_multi_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                         uint64_t id) override;
  void set_request_timeout(time_point t, caf::abstract_actor* self, caf::message_id id) override;
  void cancel_timeouts(caf::abstract_actor* self) override;

private:
  void note(caf::abstract_actor* self);

  std::mutex mutex_;
  std::unordered_set<caf::actor_id> with_timeouts_; ///< actors that set one and have not ended
  /// with_timeouts_'s size, read without the lock by an ending actor: when no actor has a timeout
  /// (the request path sets none), an actor's end costs no lock. An actor that set one counted
  /// it before it can end, so its own end always sees it.
  std::atomic<std::size_t> timed_{0};
};

class loop_scheduler final : public caf::scheduler::abstract_coordinator {
public:
  loop_scheduler(caf::actor_system& system, io_loops& loops);
  ~loop_scheduler() override;

  /// Loads this scheduler into `cfg` (before the actor system is made from it). `loops` must run
  /// until the actor system has been destroyed.
  static void install(caf::actor_system_config& cfg, io_loops& loops);

  void enqueue(caf::resumable* job) override;
  caf::actor_clock& clock() noexcept override { return clock_; }

protected:
  void start() override;
  void stop() override;

private:
  class loop_unit;

  io_loops& loops_;
  std::vector<std::unique_ptr<loop_unit>> units_;
  quiet_clock clock_; ///< delayed messages (backoff) and request timeouts
  std::thread clock_thread_;
};

} // namespace gather
