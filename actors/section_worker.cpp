// The section worker: one section of one request, from its first attempt to its one reply.
//
//   coordinator --run--------------> worker --lookup--> section_cache   (cached sections only:
//                                           <--hit | lead | joined(outcome)--  see section_cache.hpp)
//                                    worker --start---> attempt_runner -> call_face -> downstream_client
//   coordinator <--attempt(i)------- worker <--done(seq)-- (the call's verdict, from its loop)
//                                    worker --retry---> worker (a delayed message: the backoff)
//                                    worker <--hedge--- (a call unanswered after the hedge
//                                                       delay: one more call of the attempt)
//                                    worker --store---> section_cache   (a flight's leader)
//                                    worker --work----> node_service on a cluster node, which runs
//                                           <--attempt, called(gRPC code), section_outcome--
//                                              a worker just like this one
//                                              (or a down message: the node died, retry or error)
//   coordinator <--section_outcome-- worker, which then quits
//
// Per-attempt timeouts belong to the downstream client (one timer per call); backoff is a delayed
// message, never a sleeping thread. A retry starts only if its backoff plus its whole timeout fit
// before the request's deadline. Before any call the route section's guard is asked (bulkhead,
// circuit, the host's retry budget: atomics, no message); a hedged attempt has several calls, the
// first ok wins and the others are cancelled. If the coordinator goes first (deadline passed,
// client gone), the down message ends the worker; what it started ends itself as its state goes
// (section_attempts.hpp): the attempt's calls are cancelled, closing their downstream connections,
// a remote run leaves its node, a probe ends as failed. Every call and every remote run holds its
// bulkhead slot (concurrency_limit::slot), given back when it goes, however it ends.
//
// The attempts' calls, spans, slots and the retry step are the attempt runner's
// (attempt_runner.hpp), which the batch coordinator shares; this worker decides when to hedge,
// guards each attempt and places it.
//
// This file: the actor, attempts, calls, hedges and retries. The guard: section_worker_guard.cpp;
// a cached section's lookup and flight: section_worker_cache.cpp; an attempt run on a cluster
// node: section_worker_remote.cpp; what they share: section_worker_steps.hpp.
#include "gather/downstream/call/call_face.hpp"
#include "gather/downstream/call/downstream_request.hpp"
#include "gather/actors/section_worker.hpp"
#include "section_worker_steps.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "gather/values/atoms.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/cluster/origin_allowlist.hpp"
#include "gather/ops/request_log.hpp"
#include "gather/downstream/answer/downstream_answer.hpp"
#include "gather/actors/messages.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/resilience/section_guards.hpp"

#include <algorithm>
#include <strings.h>

namespace gather {

namespace worker_steps {

millis time_left(const section_worker_state& st) {
  return std::max(millis{1}, std::chrono::duration_cast<millis>(st.call->deadline - clock::now()));
}

void reply(worker_ptr self, section_outcome&& outcome) {
  auto& st = self->state;
  outcome.ms = std::chrono::duration_cast<millis>(clock::now() - st.started).count();
  // The coordinator may have answered already: this reply then lands on a dead mailbox.
  if (st.call->progress->answered.load(std::memory_order_relaxed))
    st.services->stats.late_replies.fetch_add(1, std::memory_order_relaxed);
  if (st.promised) {
    st.promise.deliver(std::move(outcome));
    st.promised = false;
  } else if (st.owes_outcome) {
    st.owes_outcome = false;
    caf::anon_send(st.coordinator, outcome_atom::value, st.call->index, std::move(outcome));
  }
  self->quit();
}

void finish(worker_ptr self, section_outcome&& outcome) {
  outcome.attempts = self->state.runner.calls();
  outcome.hedges = self->state.hedges;
  if (outcome.not_made == not_made_reason::none)
    outcome.not_made = self->state.not_made;
  if (!self->state.call->cache_key.empty())
    finish_flight(self, std::move(outcome));
  else
    reply(self, std::move(outcome));
}

/// A call started, here or on a node (which reports its calls to the worker that sent it): the
/// runner has counted it; the metrics and the coordinator are told.
void count_attempt(worker_ptr self, bool retry) {
  auto& st = self->state;
  if (retry && st.call->guard)
    st.serving->counters.retry(st.call->route, st.call->index);
  // The coordinator reads the count only if it answers before this section ends: a shared counter,
  // not a message (and a turn of the coordinator) per call. A node's worker reports by message.
  if (!st.call->progress->count_call(st.call->index))
    self->send(st.coordinator, attempt_atom::value, st.call->index);
}

// ---------------------------------------------------------------------------------------------
// Attempts and their calls

/// How long this call may go unanswered before the attempt gets its next hedge call; nullopt: no
/// hedge (none configured, all made, a percentile before 20 ok calls, or one that would start
/// after its attempt or its request ended).
std::optional<std::chrono::microseconds> hedge_delay(const section_worker_state& st, steady_time now) {
  const auto* guard = st.call->guard;
  if (!guard || !guard->hedge || st.runner.attempt_calls() >= guard->hedge->max) // with this call: > max
    return std::nullopt;
  const auto delay = guard->hedge_delay();
  if (!delay)
    return std::nullopt;
  const auto at = now + *delay;
  if (at >= st.runner.attempt_started() + millis{st.call->work.timeout_ms} || at >= st.call->deadline)
    return std::nullopt;
  return delay;
}

/// Starts one call of the current attempt, which holds `slot` while it runs. Its timeout is what is
/// left of the attempt's: hedges never outlive the attempt they belong to.
void launch_call(worker_ptr self, bool retry, concurrency_limit::slot slot) {
  auto& st = self->state;
  const auto now = clock::now();
  const auto attempt_timeout = millis{st.call->work.timeout_ms};
  const auto left = std::max(millis{1}, attempt_timeout - std::chrono::duration_cast<millis>(
                                                            now - st.runner.attempt_started()));
  const auto hedge_after = hedge_delay(st, now);
  // The answered flag is the request's (an alias of its progress, no allocation).
  call_return to{caf::actor_cast<caf::actor>(self),
                 std::shared_ptr<const std::atomic<bool>>(st.call->progress, &st.call->progress->answered),
                 &st.services->stats, 0};
  st.runner.launch(call_request_of(*st.call, left, now),
                   call_labels{&st.services->spans, &st.call->name, st.call->trace ? &*st.call->trace : nullptr},
                   std::move(to), hedge_after, std::move(slot), now);
  count_attempt(self, retry);
}

/// On a cluster node every attempt (the first and each retry) must be for an origin the node was
/// started with: anything else ends `error` here, no call made, and is logged.
bool origin_allowed(worker_ptr self) {
  auto& st = self->state;
  std::string origin;
  if (st.services->origins.allows(st.call->work.url, origin))
    return true;
  const std::string request_id{header_value(st.call->work.header_lines, "X-Request-Id")};
  nlohmann::json line = {{"event", "origin_refused"}, {"origin", origin}, {"request_id", request_id},
                         {"detail", "not allowed on this node (--allow): no call made"}};
  write_log_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  section_outcome outcome;
  outcome.status = section_status::error;
  outcome.detail = "origin " + origin + " is not allowed on this node";
  finish(self, std::move(outcome));
  return false;
}

void start_attempt(worker_ptr self, concurrency_limit::slot slot) {
  auto& st = self->state;
  if (!origin_allowed(self))
    return;
  const bool retry = st.runner.calls() > 0;
  st.runner.begin_attempt(clock::now(), st.call->guard ? &st.call->guard->budget : nullptr);
  launch_call(self, retry, std::move(slot));
}

void on_hedge(worker_ptr self, std::uint32_t attempt) {
  auto& st = self->state;
  if (attempt != st.runner.attempt() || !st.runner.running())
    return; // that attempt has ended
  auto slot = st.call->guard->bulkhead.try_take();
  if (!slot) {
    st.not_made = not_made_reason::max_concurrent;
    return;
  }
  if (!budget_allows_extra(self))
    return;
  ++st.hedges;
  launch_call(self, false, std::move(*slot));
}

void execute(worker_ptr self);

void retry_or_finish(worker_ptr self, bool retryable, section_outcome&& outcome) {
  auto& st = self->state;
  const auto& work = st.call->work;
  auto* guard = st.call->guard;
  switch (st.runner.after_failure(self, 0, retryable, retry_of(work), millis{work.timeout_ms},
                                  st.call->deadline, guard ? &guard->budget : nullptr, outcome)) {
    case retry_step::now:
      st.last_failure = std::move(outcome);
      return execute(self);
    case retry_step::later: // (retry_atom) after the backoff
      st.last_failure = std::move(outcome);
      return;
    case retry_step::none:
      break;
  }
  if (outcome.not_made == not_made_reason::retry_budget) // the budget refused: counted
    st.serving->counters.budget_denied(st.call->route, st.call->index);
  finish(self, std::move(outcome));
}

/// An attempt: admitted by the guard, then run here, or sent to a cluster node when one is up and
/// less busy.
void execute(worker_ptr self) {
  auto& st = self->state;
  auto slot = admit(self);
  if (!slot)
    return;
  if (st.services->nodes.has_nodes() && !st.call->upstream) { // an upstream's calls stay here
    auto where = st.services->nodes.place();
    if (where.node)
      return run_remote(self, *where.node, std::move(where.actor), std::move(*slot));
    if (!st.local)
      st.local.emplace(st.services->nodes);
  }
  start_attempt(self, std::move(*slot));
}

/// One call ended. The first `ok` wins the attempt and cancels the rest; a failure ends the
/// attempt only once every call of it has failed (its result is the last failure).
void call_ended(worker_ptr self, std::uint32_t seq, answer_verdict&& verdict) {
  auto& st = self->state;
  steady_time started;
  call_span span;
  if (!st.runner.end_call(seq, started, span)) { // cancelled while its answer was on the way
    st.services->stats.late_replies.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (verdict.grpc_code >= 0) { // a node's call is counted by the gateway that sent it
    if (st.call->guard)
      st.serving->counters.grpc_call(st.call->route, st.call->index, verdict.grpc_code);
    else
      self->send(st.coordinator, called_atom::value, std::int32_t{verdict.grpc_code});
  }
  const bool retryable = verdict.retryable;
  auto outcome = outcome_of(std::move(verdict));
  span.finish(outcome.status, outcome.last_http, outcome.grpc_code);
  if (outcome.status == section_status::ok) {
    auto* guard = st.call->guard;
    if (guard && guard->latencies)
      guard->latencies->record(
          std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - started));
    if (st.runner.attempt_calls() > 1)
      st.serving->counters.hedge(st.call->route, st.call->index, st.runner.is_hedge(seq));
    st.runner.cancel(); // the others: their connections close, their answers never come
    circuit_record(self, false);
    return finish(self, std::move(outcome));
  }
  if (st.runner.running())
    return; // another call of this attempt may still succeed
  circuit_record(self, true);
  retry_or_finish(self, retryable, std::move(outcome));
}

} // namespace worker_steps

using namespace worker_steps;

namespace {

/// From the run request (a node's worker) or at once (a gateway's).
void run(worker_ptr self) {
  auto& st = self->state;
  st.started = clock::now();
  if (!st.call->cache_key.empty())
    look_up(self);
  else
    execute(self);
}

/// What started it is gone: no answer is awaited any more.
void stop(worker_ptr self) {
  auto& st = self->state;
  st.owes_outcome = false; // its coordinator stopped it: it has answered, or gone
  if (st.promised) { // never leave a promise undelivered: it would pin this actor
    section_outcome gone;
    gone.status = section_status::timeout;
    st.promise.deliver(std::move(gone));
    st.promised = false;
  }
  self->quit(); // as its state goes, the attempt cancels its calls
}

} // namespace

section_worker_state::~section_worker_state() {
  if (!owes_outcome)
    return;
  // Ended without an outcome and without being stopped (an exception in a handler): the
  // coordinator is told, as its run request's error told it before (docs/actors.md).
  section_outcome outcome;
  outcome.status = section_status::error;
  outcome.attempts = runner.calls();
  outcome.detail = "worker: ended without an answer";
  caf::anon_send(coordinator, outcome_atom::value, call->index, std::move(outcome));
}

caf::behavior section_worker(caf::stateful_actor<section_worker_state>* self, caf::actor coordinator,
                             const process_services& services,
                             std::shared_ptr<const serving_config> serving,
                             std::unique_ptr<section_call> call) {
  auto& st = self->state;
  st.services = &services;
  st.runner = attempt_runner{services.client};
  st.serving = std::move(serving);
  st.alive = live_count{services.stats.workers};
  st.call = std::move(call); // held as it came: a section_call is a dozen strings and vectors
  st.coordinator = coordinator;
  // A gateway's worker is stopped by its coordinator's exit message when the request is answered
  // before the section ends. A node's worker watches the gateway's worker that sent it, in
  // another process: it ends when that one does, or when the link to it goes.
  if (!st.call->guard)
    self->monitor(coordinator);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    if (st.remote && down.source == st.remote->actor().address())
      return node_failed(self, "the node went down");
    stop(self);
  });
  self->set_exit_handler([self](caf::exit_msg&) { stop(self); });
  if (st.call->guard) { // a gateway's worker: it may end (and quit) before its behavior is set
    st.owes_outcome = true;
    run(self);
  }
  return {
    [self](run_atom) -> caf::result<section_outcome> { // a node's worker
      auto& st = self->state;
      st.promise = self->make_response_promise<section_outcome>();
      st.promised = true;
      run(self);
      return st.promise;
    },
    [self](done_atom, std::size_t, std::uint32_t seq, answer_verdict& verdict) {
      call_ended(self, seq, std::move(verdict));
    },
    [self](retry_atom, std::size_t) { execute(self); },
    [self](shared_atom, std::int32_t what, std::string& data, std::int64_t fresh_ms) {
      shared_found(self, what, data, fresh_ms);
    },
    [self](poll_atom) { shared_poll(self); },
    [self](hedge_atom, std::size_t, std::uint32_t attempt) { on_hedge(self, attempt); },
    [self](attempt_atom, std::size_t) { // a call the node made
      auto& runner = self->state.runner;
      const bool retry = runner.calls() > 0;
      runner.count_call();
      count_attempt(self, retry);
    },
    [self](called_atom, std::int32_t code) { // a gRPC call the node made ended
      auto& st = self->state;
      if (st.call->guard)
        st.serving->counters.grpc_call(st.call->route, st.call->index, code);
    },
  };
}

} // namespace gather
