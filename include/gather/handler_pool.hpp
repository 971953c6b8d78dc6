// The HTTP front's handler threads: httplib::ThreadPool, except that failing to start them all is
// an error the caller sees. httplib's pool creates its threads in its constructor, and when the
// system refuses one (threads-max, pid_max, a cgroup's pids limit) the threads already started
// are destroyed joinable: std::terminate. This pool joins them and throws instead.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace gather {

class handler_pool : public httplib::TaskQueue {
public:
  /// Starts `threads` threads, or throws std::runtime_error (with none left running).
  explicit handler_pool(std::size_t threads);
  ~handler_pool() override;
  handler_pool(const handler_pool&) = delete;
  handler_pool& operator=(const handler_pool&) = delete;

  void enqueue(std::function<void()> job) override;
  void shutdown() override; ///< runs what is queued, then joins every thread

private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace gather
