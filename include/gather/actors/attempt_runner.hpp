// The attempt runner: one logical call's attempts, made through the call face (call_face.hpp),
// the same for the section worker (one runner per section) and the batch coordinator (one per
// batch call). What it owns and ends itself (RAII): the calls of the current attempt (the first
// and its hedges), each with its CLIENT span and bulkhead slot; the calls made so far; the
// upstream's endpoints they went to (a retry or a hedge avoids them). What it decides: after a
// failed attempt, whether the next one starts now, after its backoff (a delayed message to the
// actor, never a sleeping thread) or not at all (the retry rule, the deadline, the host's retry
// budget), with the reason written into the outcome.
//
// What stays with its actor: the guard before an attempt (bulkhead, circuit), when a hedge is due
// (the section's hedge policy), where the attempt runs (here or on a cluster node), and what an
// ended call means to it.
//
// Its messages, to the actor that owns it, each naming the call by its `key` (a batch's call
// number; 0 for a section) and the attempt or call they belong to:
//   (done_atom, key, seq, answer_verdict)  a call ended (sent from the loop that ran it, unless
//                                          the request was answered: then a late reply, counted)
//   (hedge_atom, key, attempt)             the hedge delay of a call of `attempt` passed
//   (retry_atom, key)                      a retry's backoff passed
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "gather/config/config.hpp"
#include "gather/downstream/call/call_face.hpp"
#include "gather/resilience/concurrency_limit.hpp"
#include "gather/tracing/call_span.hpp"
#include "gather/values/section_outcome.hpp"

namespace caf {
class event_based_actor;
}

namespace gather {

class downstream_client;
class retry_budget;
class span_exporter;
struct gateway_stats;
struct traceparent;

/// Where a call's verdict goes from the loop that ran it.
struct call_return {
  caf::actor actor;
  /// Set once the request is answered: a verdict after it is only counted as a late reply.
  std::shared_ptr<const std::atomic<bool>> answered;
  gateway_stats* stats = nullptr;
  std::size_t key = 0; ///< which of the actor's calls (a batch's call number; 0 for a section)
};

/// What a call's CLIENT span says: its exporter, name, and the request's trace when it has one
/// (null: read from the traceparent line).
struct call_labels {
  span_exporter* spans = nullptr;
  const std::string* name = nullptr;
  const traceparent* trace = nullptr;
};

/// After a failed attempt: the next one now, after its backoff ((retry_atom, key) comes), or none.
enum class retry_step { now, later, none };

class attempt_runner {
public:
  attempt_runner() = default; ///< makes no call until given a client
  explicit attempt_runner(downstream_client& client) : client_(&client) {}
  attempt_runner(attempt_runner&& other) noexcept;
  attempt_runner& operator=(attempt_runner&& other) noexcept; ///< cancels this one's calls first
  attempt_runner(const attempt_runner&) = delete;
  attempt_runner& operator=(const attempt_runner&) = delete;
  ~attempt_runner() { cancel(); }

  /// Calls made so far, every attempt's and every hedge's (and those a cluster node made).
  std::int32_t calls() const { return calls_; }
  std::uint32_t attempt() const { return attempt_; } ///< the current attempt's number (1, 2, ...)
  steady_time attempt_started() const { return attempt_started_; }
  std::int32_t attempt_calls() const { return attempt_calls_; } ///< the current attempt's calls
  bool running() const { return !running_.empty(); }
  /// True when call `seq` was a hedge, not its attempt's first call.
  bool is_hedge(std::uint32_t seq) const { return seq != first_; }

  /// A new attempt begins at `now` (what runs of the last one is cancelled); when no call was
  /// made yet, `budget` (may be null) is told of a first attempt.
  void begin_attempt(steady_time now, retry_budget* budget);
  /// A call made elsewhere (on a cluster node, which reports each): counted.
  void count_call() { ++calls_; }

  /// Starts one call of the current attempt, which holds `slot` while it runs: its span begun on
  /// its header lines, the upstream's endpoints used so far avoided, and, when `hedge_after` is
  /// set, (hedge_atom, key, attempt) sent once it goes that long unanswered. Counts the call
  /// first (its span says its number). Returns its seq.
  std::uint32_t launch(call_description&& call, const call_labels& labels, call_return to,
                       std::optional<std::chrono::microseconds> hedge_after,
                       concurrency_limit::slot&& slot, steady_time now);

  /// Call `seq` ended: taken out, its start and span handed over, its slot given back. False when
  /// it no longer runs (cancelled while its answer was on the way).
  bool end_call(std::uint32_t seq, steady_time& started, call_span& span);
  /// Cancels every call still running: their connections close, their spans end "cancelled".
  void cancel();

  /// After a failed attempt whose failure is `retryable`: the retry rule (docs/api.md) for
  /// `policy` and attempts of `timeout` before `deadline`, then `budget` (may be null) for an
  /// extra call. `later`: (retry_atom, key) is sent to `self` after the backoff. `none`: the
  /// outcome's detail says why no retry is made (and its not_made is retry_budget when the budget
  /// refused).
  retry_step after_failure(caf::event_based_actor* self, std::size_t key, bool retryable,
                           const retry_policy& policy, millis timeout, steady_time deadline,
                           retry_budget* budget, section_outcome& outcome) const;

private:
  /// One call of the attempt (the first, or a hedge).
  struct running_call {
    std::uint32_t seq = 0;      ///< tells its completion from another call's
    std::uint64_t id = 0;       ///< the client's
    steady_time started;
    call_span span;             ///< its own: hedges and retries each have one
    concurrency_limit::slot slot; ///< its place in the bulkhead, while it runs
  };

  downstream_client* client_ = nullptr;
  std::vector<running_call> running_;
  std::vector<std::uint32_t> endpoints_; ///< the upstream's endpoints its calls went to, in order
  std::int32_t calls_ = 0;
  std::uint32_t next_seq_ = 0;
  std::uint32_t attempt_ = 0;
  std::uint32_t first_ = 0; ///< seq of the current attempt's first call
  std::int32_t attempt_calls_ = 0;
  steady_time attempt_started_{};
};

} // namespace gather
