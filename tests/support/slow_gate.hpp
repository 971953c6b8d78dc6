// A downstream answer held until the test lets it go: a handler calls hold() and waits until
// release(), so a test orders "this happened while that call was still running" by events, not by
// sleeps. Destroying the gate releases it (declare it after the test_server: a failed check never
// leaves a handler held while the server joins its threads). The state is shared with the handlers
// that wait, so one that wakes as the gate is destroyed never touches a destroyed mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace gather::test {

class slow_gate {
public:
  slow_gate() = default;
  slow_gate(const slow_gate&) = delete;
  slow_gate& operator=(const slow_gate&) = delete;
  ~slow_gate() { release(); }

  void release() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->open = true;
    state_->cv.notify_all();
  }

  /// In a handler: waits until release() (or `bound`, so a test that never releases still ends).
  void hold(std::chrono::milliseconds bound = std::chrono::seconds(30)) const {
    const auto state = state_;
    std::unique_lock<std::mutex> lock(state->mutex);
    ++state->entered;
    state->cv.wait_for(lock, bound, [&] { return state->open; });
  }

  /// Handlers that have called hold() so far (released or not).
  int entered() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->entered;
  }

private:
  struct state {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
    int entered = 0;
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

} // namespace gather::test
