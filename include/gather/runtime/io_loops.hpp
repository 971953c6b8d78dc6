// The event loops: `io_threads` Asio io_contexts, one thread each. Every inbound connection and
// every downstream socket lives on one of them; nothing else runs I/O.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace gather {

/// The io_context the calling thread runs when it is a loop's thread of some io_loops; else null.
/// Lets a lower layer defer work to the end of the loop's current turn (the request log's lines).
boost::asio::io_context* this_thread_loop();

class io_loops {
public:
  explicit io_loops(std::size_t count);
  ~io_loops(); ///< stop()
  io_loops(const io_loops&) = delete;
  io_loops& operator=(const io_loops&) = delete;

  std::size_t size() const { return loops_.size(); }
  boost::asio::io_context& loop(std::size_t i) { return *loops_[i]->context; }
  /// The loops in turn: where the next connection goes.
  boost::asio::io_context& next();
  /// The index of the loop the calling thread runs, when it runs one of these loops.
  std::optional<std::size_t> current() const;

  /// Runs `what(i)` on every loop i and returns once each has run it (and whatever those loops had
  /// queued before it). Never call it from a loop's own thread.
  void run_on_each(const std::function<void(std::size_t)>& what);

  /// Starts one thread per loop. Throws std::runtime_error when the system refuses a thread.
  void start();
  /// Stops every loop (handlers not yet run are dropped) and joins the threads.
  void stop();

private:
  struct one_loop {
    std::unique_ptr<boost::asio::io_context> context;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard;
    std::thread thread;
  };
  std::vector<std::unique_ptr<one_loop>> loops_;
  std::atomic<std::size_t> turn_{0};
};

} // namespace gather
