#include "gather/runtime/loop_scheduler.hpp"

#include <atomic>
#include <deque>

#include <boost/asio/post.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/logger.hpp>
#include <caf/resumable.hpp>

namespace gather {

namespace {

/// Messages an actor handles in one go before its loop serves the others (connections, sockets,
/// other actors): a cache shard with 10,000 lookups queued must not stall a loop for their time.
constexpr std::size_t actor_throughput = 64;

} // namespace

/// Actors resumed in one handler of the loop before it serves its sockets again: a chain of
/// messages between a request's actors (front -> coordinator -> workers -> answer) runs in one
/// handler instead of one each, with the loop's epoll poll between them; a busy loop still polls
/// after this many.
constexpr std::size_t resumes_per_turn = 64;

/// One loop seen as a CAF execution unit: actors resumed here send and spawn through it.
///
/// Actors made ready on the loop's own thread wait in `ready_` (this thread's alone: no lock),
/// drained by one handler posted when the first of them arrives; an actor made ready on another
/// thread (the middleman, the clock, the main thread) is posted to the loop on its own.
class loop_scheduler::loop_unit final : public caf::execution_unit {
public:
  loop_unit(caf::actor_system& system, boost::asio::io_context& loop)
    : caf::execution_unit(&system), loop_(loop) {}

  /// Called by an actor running on this loop for an actor it made ready.
  void exec_later(caf::resumable* job) override { schedule_here(job); }

  /// From this loop's own thread.
  void schedule_here(caf::resumable* job) {
    ready_.push_back(job);
    if (!drain_posted_) {
      drain_posted_ = true;
      boost::asio::post(loop_, [this] { drain(); });
    }
  }

  /// From any other thread.
  void schedule_from_elsewhere(caf::resumable* job) {
    boost::asio::post(loop_, [this, job] { run(job); });
  }

private:
  /// Debian's CAF is built with a logger at level quiet: it logs nothing, but while a thread knows
  /// it, every resume, launch and destruction of an actor does its bookkeeping (a lock and a hash
  /// map keyed by the thread's id, twice each: ~4% of a four-section request's instructions).
  /// CAF's spawn tells the spawning thread again each time (actor_system::spawn_impl), so the
  /// thread forgets it before each resume: a thread-local read when it is already unset.
  static void forget_logger() {
    if (caf::logger::current_logger() != nullptr)
      caf::logger::set_current_actor_system(nullptr);
  }

  /// Runs with drain_posted_ still set: an actor made ready by one it runs joins ready_ without
  /// posting another drain, which would find nothing left, and only after a turn of the loop's
  /// epoll (Asio runs what a handler posts after its next poll).
  void drain() {
    for (std::size_t n = 0; n < resumes_per_turn && !ready_.empty(); ++n) {
      auto* job = ready_.front();
      ready_.pop_front();
      run(job); // what it makes ready joins ready_, and runs in this turn while there is room
    }
    if (ready_.empty()) {
      drain_posted_ = false;
      return;
    }
    boost::asio::post(loop_, [this] { drain(); }); // the rest after what else the loop has to do
  }

  void run(caf::resumable* job) {
    forget_logger();
    switch (job->resume(this, actor_throughput)) {
      case caf::resumable::resume_later:
        return schedule_here(job); // more messages: after the others ready now
      case caf::resumable::done:
      case caf::resumable::awaiting_message:
        caf::intrusive_ptr_release(job);
        return;
      case caf::resumable::shutdown_execution_unit:
        return;
    }
  }

  boost::asio::io_context& loop_;
  std::deque<caf::resumable*> ready_; ///< this loop's thread only
  bool drain_posted_ = false;         ///< a drain() is queued on the loop
};

void quiet_clock::note(caf::abstract_actor* self) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (with_timeouts_.insert(self->id()).second)
    timed_.fetch_add(1, std::memory_order_relaxed);
}

void quiet_clock::set_ordinary_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                                       uint64_t id) {
  note(self);
  thread_safe_actor_clock::set_ordinary_timeout(t, self, type, id);
}

void quiet_clock::set_multi_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                                    uint64_t id) {
  note(self);
  thread_safe_actor_clock::set_multi_timeout(t, self, type, id);
}

void quiet_clock::set_request_timeout(time_point t, caf::abstract_actor* self, caf::message_id id) {
  note(self);
  thread_safe_actor_clock::set_request_timeout(t, self, id);
}

void quiet_clock::cancel_timeouts(caf::abstract_actor* self) {
  if (timed_.load(std::memory_order_relaxed) == 0)
    return; // no actor has one: nothing on the clock thread to cancel
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (with_timeouts_.erase(self->id()) == 0)
      return; // it never set one: nothing on the clock thread to cancel
    timed_.fetch_sub(1, std::memory_order_relaxed);
  }
  thread_safe_actor_clock::cancel_timeouts(self);
}

loop_scheduler::loop_scheduler(caf::actor_system& system, io_loops& loops)
  : abstract_coordinator(system), loops_(loops) {
  for (std::size_t i = 0; i < loops.size(); ++i)
    units_.push_back(std::make_unique<loop_unit>(system, loops.loop(i)));
}

loop_scheduler::~loop_scheduler() = default;

void loop_scheduler::install(caf::actor_system_config& cfg, io_loops& loops) {
  // CAF makes its default scheduler only when no module of the scheduler's kind was loaded.
  cfg.module_factories.push_back(
      [&loops](caf::actor_system& system) -> caf::actor_system::module* {
        return new loop_scheduler(system, loops);
      });
  cfg.set("scheduler.max-threads", loops.size()); // what num_workers() reports
}

void loop_scheduler::enqueue(caf::resumable* job) {
  static std::atomic<std::size_t> turn{0};
  if (const auto here = loops_.current())
    return units_[*here]->schedule_here(job);
  units_[turn.fetch_add(1, std::memory_order_relaxed) % units_.size()]->schedule_from_elsewhere(job);
}

void loop_scheduler::start() {
  // The loops do not hold the system's logger (loop_unit::forget_logger): a thread that holds it
  // keeps a reference that ~actor_system waits to see released, which stop() releases for the
  // spawns made since the last resume.
  clock_thread_ = std::thread([this] { clock_.run_dispatch_loop(); });
  abstract_coordinator::start();
}

void loop_scheduler::stop() {
  // The actor system has waited for every actor; the loops still run, so the utility actors
  // (CAF's printer) can finish.
  stop_actors();
  loops_.run_on_each([](std::size_t) { CAF_SET_LOGGER_SYS(nullptr); });
  clock_.cancel_dispatch_loop();
  if (clock_thread_.joinable())
    clock_thread_.join();
}

} // namespace gather
