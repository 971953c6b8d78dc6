// What one request's actors share without messages (actors/coordinator.cpp, section_worker.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace gather {

/// Made once per request by its coordinator and held by its workers and their calls' completions,
/// so it outlives whichever of them ends last. Written on one side and read on the other, from any
/// thread: nothing here orders other memory (relaxed).
struct request_progress {
  /// `sections`: 0 for a cluster node's call, whose attempts its gateway's worker counts.
  explicit request_progress(std::size_t sections) : calls_started_(sections) {}

  /// Set once the request is answered: anything arriving afterwards is a late reply.
  std::atomic<bool> answered{false};

  /// A call of section `i` started (each attempt and hedge). False when this request counts none
  /// (a node's call): the caller reports it by message instead.
  bool count_call(std::size_t i) {
    if (i >= calls_started_.size())
      return false;
    calls_started_[i].fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  /// The calls section `i` has started so far: what a section cut short by the answer reports.
  std::int32_t calls_started(std::size_t i) const {
    return i < calls_started_.size() ? calls_started_[i].load(std::memory_order_relaxed) : 0;
  }

private:
  std::vector<std::atomic<std::int32_t>> calls_started_;
};

} // namespace gather
