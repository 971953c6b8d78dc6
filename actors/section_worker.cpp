// The section worker: one section of one request, from its first attempt to its one reply.
//
//   coordinator --run--------------> worker --submit--> downstream_client (curl I/O thread)
//   coordinator <--attempt(i)------- worker <--done---- downstream_client
//                                    worker --retry---> worker (a delayed message: the backoff)
//   coordinator <--section_outcome-- worker, which then quits
//
// Per-attempt timeouts belong to curl (CURLOPT_TIMEOUT_MS); backoff is a delayed message, never a
// sleeping thread. A retry starts only if its backoff plus its whole timeout fit before the
// request's deadline. If the coordinator goes first (deadline passed, client gone), the down message
// ends the worker, and its state's destructor cancels the transfer, closing the downstream connection.
#include "gather/section_worker.hpp"

#include <caf/all.hpp>

#include "gather/atoms.hpp"
#include "gather/downstream_answer.hpp"
#include "gather/messages.hpp"
#include "gather/metrics.hpp"
#include "gather/retry_rule.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;
using worker_ptr = caf::stateful_actor<section_worker_state>*;

void reply(worker_ptr self, section_outcome outcome) {
  auto& st = self->state;
  outcome.attempts = st.attempts;
  outcome.ms = std::chrono::duration_cast<millis>(clock::now() - st.started).count();
  // The coordinator may have answered already: this reply then lands on a dead mailbox.
  if (st.call.answered->load())
    st.runtime.stats->late_replies.fetch_add(1, std::memory_order_relaxed);
  st.promise.deliver(std::move(outcome));
  st.promised = false;
  self->quit();
}

void start_attempt(worker_ptr self) {
  auto& st = self->state;
  if (++st.attempts > 1)
    st.runtime.counters->retry(st.call.route, st.call.index);
  self->send(st.coordinator, attempt_atom::value, st.call.index);
  transfer_request request{st.call.url, st.call.headers, st.call.section->timeout,
                           st.runtime.max_response_bytes};
  auto me = caf::actor_cast<caf::actor>(self);
  auto answered = st.call.answered;
  auto* stats = st.runtime.stats;
  // Runs on the curl I/O thread: count or forward, nothing else.
  st.transfer = st.runtime.client->submit(std::move(request), [me, answered, stats](transfer_result&& r) {
    if (answered->load())
      stats->late_replies.fetch_add(1, std::memory_order_relaxed);
    else
      caf::anon_send(me, done_atom::value, std::move(r));
  });
}

void attempt_ended(worker_ptr self, transfer_result&& result) {
  auto& st = self->state;
  st.transfer = 0;
  const auto& section = *st.call.section;
  auto verdict = classify_answer(std::move(result), section.fields);
  section_outcome outcome;
  outcome.status = verdict.status;
  outcome.last_http = verdict.http_status;
  outcome.detail = std::move(verdict.detail);
  if (verdict.status == section_status::ok) {
    outcome.data = std::move(verdict.data);
    return reply(self, std::move(outcome));
  }
  auto next = decide_retry(verdict.retryable, st.attempts, section.retry, section.timeout,
                           st.call.deadline, clock::now());
  if (next.what == retry_decision::kind::retry) {
    if (next.backoff.count() == 0)
      start_attempt(self);
    else
      self->delayed_send(self, next.backoff, retry_atom::value);
    return;
  }
  if (next.what == retry_decision::kind::too_late)
    outcome.detail += "; no retry: it would not finish before the deadline";
  reply(self, std::move(outcome));
}

} // namespace

section_worker_state::~section_worker_state() {
  if (transfer != 0)
    runtime.client->cancel(transfer);
  if (runtime.stats)
    runtime.stats->workers.fetch_sub(1, std::memory_order_relaxed);
}

caf::behavior section_worker(caf::stateful_actor<section_worker_state>* self, caf::actor coordinator,
                             section_runtime runtime, section_call call) {
  auto& st = self->state;
  st.runtime = runtime;
  st.call = std::move(call);
  st.coordinator = coordinator;
  st.runtime.stats->workers.fetch_add(1, std::memory_order_relaxed);
  self->monitor(coordinator);
  self->set_down_handler([self](caf::down_msg&) {
    auto& st = self->state;
    if (st.promised) { // never leave a promise undelivered: it would pin this actor
      st.promise.deliver(section_outcome{section_status::timeout});
      st.promised = false;
    }
    self->quit(); // the state's destructor cancels the transfer
  });
  return {
    [self](run_atom) -> caf::result<section_outcome> {
      auto& st = self->state;
      st.promise = self->make_response_promise<section_outcome>();
      st.promised = true;
      st.started = clock::now();
      start_attempt(self);
      return st.promise;
    },
    [self](done_atom, transfer_result& result) { attempt_ended(self, std::move(result)); },
    [self](retry_atom) { start_attempt(self); },
  };
}

} // namespace gather
