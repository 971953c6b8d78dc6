#include "gather/runtime/io_loops.hpp"

#include <future>
#include <stdexcept>

#include <boost/asio/post.hpp>
#include <system_error>

namespace gather {

namespace {
/// Which loop this thread runs (set once, when the loop's thread starts).
thread_local const io_loops* running_loops = nullptr;
thread_local std::size_t running_index = 0;
thread_local boost::asio::io_context* running_context = nullptr;
} // namespace

boost::asio::io_context* this_thread_loop() {
  return running_context;
}

io_loops::io_loops(std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    auto loop = std::make_unique<one_loop>();
    // Concurrency hint 1: each context is run by exactly one thread, so Asio may skip its locks.
    loop->context = std::make_unique<boost::asio::io_context>(1);
    loops_.push_back(std::move(loop));
  }
}

io_loops::~io_loops() {
  stop();
}

std::optional<std::size_t> io_loops::current() const {
  if (running_loops != this)
    return std::nullopt;
  return running_index;
}

boost::asio::io_context& io_loops::next() {
  return loop(turn_.fetch_add(1, std::memory_order_relaxed) % loops_.size());
}

void io_loops::run_on_each(const std::function<void(std::size_t)>& what) {
  std::vector<std::future<void>> done;
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    auto ran = std::make_shared<std::promise<void>>();
    done.push_back(ran->get_future());
    boost::asio::post(*loops_[i]->context, [ran, &what, i] {
      what(i);
      ran->set_value();
    });
  }
  for (auto& f : done)
    f.wait();
}

void io_loops::start() {
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    auto& loop = loops_[i];
    loop->guard.emplace(loop->context->get_executor());
    try {
      loop->thread = std::thread([this, i, context = loop->context.get()] {
        running_loops = this;
        running_index = i;
        running_context = context;
        context->run();
      });
    } catch (const std::system_error& e) {
      stop();
      throw std::runtime_error(std::string{"cannot start an I/O thread: "} + e.what());
    }
  }
}

void io_loops::stop() {
  for (auto& loop : loops_) {
    loop->guard.reset();
    loop->context->stop();
  }
  for (auto& loop : loops_)
    if (loop->thread.joinable())
      loop->thread.join();
}

} // namespace gather
