// The one place a thread waits: an HTTP handler thread waiting for its coordinator's answer.
//
// cpp-httplib has no asynchronous responses, so the handler thread blocks here, in poll(), on
// three things at once: the coordinator delivering (an eventfd), the client hanging up (its
// socket), and a hard time limit. The channel is shared by the handler and the coordinator, so the
// eventfd outlives whichever of them finishes first.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>

#include "gather/http_reply.hpp"

namespace gather {

class reply_channel {
public:
  enum class outcome { replied, client_gone, timed_out };

  reply_channel();
  ~reply_channel();
  reply_channel(const reply_channel&) = delete;
  reply_channel& operator=(const reply_channel&) = delete;

  /// True for the first caller only. The coordinator claims before it counts and logs its answer,
  /// the handler before it counts and logs a 499 or 504 of its own: one request, one log line.
  bool claim() { return !claimed_.exchange(true); }

  /// Called once by the coordinator; later calls are ignored.
  void deliver(http_reply reply);

  /// Waits for deliver(), for the peer of `client_fd` to hang up (-1: don't watch), or `limit`.
  outcome wait(int client_fd, std::chrono::steady_clock::time_point limit);

  /// The delivered reply (after wait() returned replied).
  http_reply take();

private:
  std::atomic<bool> claimed_{false};
  std::mutex mutex_;
  std::optional<http_reply> reply_;
  int event_fd_ = -1;
};

} // namespace gather
