#include "gather/handler_pool.hpp"

#include <stdexcept>
#include <string>
#include <system_error>

namespace gather {

handler_pool::handler_pool(std::size_t threads) {
  threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i)
      threads_.emplace_back([this] { work(); });
  } catch (const std::system_error& e) {
    const auto started = threads_.size();
    shutdown();
    throw std::runtime_error("cannot start " + std::to_string(threads) + " handler threads: the system refused one after " +
                             std::to_string(started) + " (" + e.what() + ")");
  }
}

handler_pool::~handler_pool() {
  shutdown();
}

void handler_pool::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void handler_pool::shutdown() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    if (t.joinable())
      t.join();
}

void handler_pool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock{mutex_};
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty())
        return; // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

} // namespace gather
