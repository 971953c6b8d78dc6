#include "gather/io_loops.hpp"

#include <stdexcept>
#include <system_error>

namespace gather {

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

boost::asio::io_context& io_loops::next() {
  return loop(turn_.fetch_add(1, std::memory_order_relaxed) % loops_.size());
}

void io_loops::start() {
  for (auto& loop : loops_) {
    loop->guard.emplace(loop->context->get_executor());
    try {
      loop->thread = std::thread([context = loop->context.get()] { context->run(); });
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
