#include "gather/runtime/loop_scheduler.hpp"

#include <atomic>

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

/// One loop seen as a CAF execution unit: actors resumed here send and spawn through it.
class loop_scheduler::loop_unit final : public caf::execution_unit {
public:
  loop_unit(caf::actor_system& system, boost::asio::io_context& loop)
    : caf::execution_unit(&system), loop_(loop) {}

  /// Called by an actor running on this loop for an actor it made ready.
  void exec_later(caf::resumable* job) override { schedule(job); }

  void schedule(caf::resumable* job) {
    boost::asio::post(loop_, [this, job] { run(job); });
  }

private:
  void run(caf::resumable* job) {
    switch (job->resume(this, actor_throughput)) {
      case caf::resumable::resume_later:
        return schedule(job); // more messages: after what else the loop has to do
      case caf::resumable::done:
      case caf::resumable::awaiting_message:
        caf::intrusive_ptr_release(job);
        return;
      case caf::resumable::shutdown_execution_unit:
        return;
    }
  }

  boost::asio::io_context& loop_;
};

void quiet_clock::note(caf::abstract_actor* self) {
  std::lock_guard<std::mutex> lock(mutex_);
  with_timeouts_.insert(self->id());
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (with_timeouts_.erase(self->id()) == 0)
      return; // it never set one: nothing on the clock thread to cancel
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
  const auto here = loops_.current();
  const auto index = here ? *here : turn.fetch_add(1, std::memory_order_relaxed) % units_.size();
  units_[index]->schedule(job);
}

void loop_scheduler::start() {
  // As CAF's own worker threads do: each thread that resumes actors knows the system's logger,
  // and holds a reference to it that ~actor_system waits to see released (stop()).
  loops_.run_on_each([sys = &system()](std::size_t) { CAF_SET_LOGGER_SYS(sys); });
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
