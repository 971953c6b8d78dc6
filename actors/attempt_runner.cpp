// The attempt runner (attempt_runner.hpp): a section's or a batch call's attempts through the call
// face, their calls, spans and slots, and the step after a failed attempt.
#include "gather/actors/attempt_runner.hpp"

#include <algorithm>
#include <utility>

#include <caf/all.hpp>

#include "gather/actors/messages.hpp"
#include "gather/downstream/answer/retry_rule.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/resilience/retry_budget.hpp"
#include "gather/values/atoms.hpp"
#include "gather/values/gateway_stats.hpp"

namespace gather {

attempt_runner::attempt_runner(attempt_runner&& other) noexcept
  : client_(other.client_),
    running_(std::move(other.running_)),
    endpoints_(std::move(other.endpoints_)),
    calls_(other.calls_),
    next_seq_(other.next_seq_),
    attempt_(other.attempt_),
    first_(other.first_),
    attempt_calls_(other.attempt_calls_),
    attempt_started_(other.attempt_started_) {
  other.running_.clear();
}

attempt_runner& attempt_runner::operator=(attempt_runner&& other) noexcept {
  if (this != &other) {
    cancel();
    client_ = other.client_;
    running_ = std::move(other.running_);
    other.running_.clear();
    endpoints_ = std::move(other.endpoints_);
    calls_ = other.calls_;
    next_seq_ = other.next_seq_;
    attempt_ = other.attempt_;
    first_ = other.first_;
    attempt_calls_ = other.attempt_calls_;
    attempt_started_ = other.attempt_started_;
  }
  return *this;
}

void attempt_runner::begin_attempt(steady_time now, retry_budget* budget) {
  cancel();
  ++attempt_;
  if (calls_ == 0 && budget) // no call yet, here or on a node: the section's first attempt
    budget->first_attempt(now);
  attempt_calls_ = 0;
  attempt_started_ = now;
}

std::uint32_t attempt_runner::launch(call_description&& call, const call_labels& labels,
                                     call_return to, std::optional<std::chrono::microseconds> hedge_after,
                                     concurrency_limit::slot&& slot, steady_time now) {
  ++calls_;
  const auto seq = ++next_seq_;
  if (attempt_calls_++ == 0)
    first_ = seq;
  auto span = call_span::begin(labels.spans, call.header_lines, *labels.name, calls_, labels.trace);
  if (call.grpc)
    span.rpc(call.grpc->path);
  // The hedge's timer is the call's own (downstream_client.hpp): a call that answers in time costs
  // no timer, message or wake-up for the hedge it did not need.
  if (hedge_after) {
    call.slow_after = *hedge_after;
    call.slow = [actor = to.actor, answered = to.answered, key = to.key, attempt = attempt_] {
      if (!answered->load(std::memory_order_relaxed))
        caf::anon_send(actor, hedge_atom::value, key, attempt);
    };
  }
  std::uint32_t picked = 0;
  if (call.upstream) {
    call.avoid = endpoints_;
    call.picked = &picked;
  }
  // Runs on an event loop's thread, the answer already classified: count or forward, nothing else.
  const auto id = start_call(*client_, std::move(call), [to = std::move(to), seq](answer_verdict&& v) {
    if (to.answered->load(std::memory_order_relaxed))
      to.stats->late_replies.fetch_add(1, std::memory_order_relaxed);
    else
      caf::anon_send(to.actor, done_atom::value, to.key, seq, std::move(v));
  });
  if (picked != 0)
    endpoints_.push_back(picked);
  // Made in place, its span moved once: a running call carries the span's strings, which every
  // move of it copies.
  auto& running = running_.emplace_back();
  running.seq = seq;
  running.id = id;
  running.started = now;
  running.span = std::move(span);
  running.slot = std::move(slot);
  return seq;
}

bool attempt_runner::end_call(std::uint32_t seq, steady_time& started, call_span& span) {
  auto it = std::find_if(running_.begin(), running_.end(),
                         [seq](const running_call& c) { return c.seq == seq; });
  if (it == running_.end())
    return false;
  started = it->started;
  span = std::move(it->span);
  running_.erase(it); // its slot goes back
  return true;
}

void attempt_runner::cancel() {
  for (auto& call : running_) {
    cancel_call(*client_, call.id);
    call.span.cancel();
  }
  running_.clear(); // their slots go back
}

retry_step attempt_runner::after_failure(caf::event_based_actor* self, std::size_t key, bool retryable,
                                         const retry_policy& policy, millis timeout,
                                         steady_time deadline, retry_budget* budget,
                                         section_outcome& outcome) const {
  const auto now = std::chrono::steady_clock::now();
  const auto next = decide_retry(retryable, calls_, policy, timeout, deadline, now);
  if (next.what == retry_decision::kind::retry && (!budget || budget->try_extra(now))) {
    if (next.backoff.count() == 0)
      return retry_step::now;
    self->delayed_send(self, next.backoff, retry_atom::value, key);
    return retry_step::later;
  }
  if (next.what == retry_decision::kind::too_late) {
    outcome.detail += "; no retry: it would not finish before the deadline";
  } else if (next.what == retry_decision::kind::retry) {
    outcome.detail += "; no retry: the retry budget of its host is spent";
    outcome.not_made = not_made_reason::retry_budget;
  }
  return retry_step::none;
}

} // namespace gather
