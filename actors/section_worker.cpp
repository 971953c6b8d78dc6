// The section worker: one section of one request, from its first attempt to its one reply.
//
//   coordinator --run--------------> worker --lookup--> section_cache   (cached sections only:
//                                           <--hit | lead | joined(outcome)--  see section_cache.hpp)
//                                    worker --submit--> downstream_client (Beast on the event loops)
//   coordinator <--attempt(i)------- worker <--done---- downstream_client
//                                    worker --retry---> worker (a delayed message: the backoff)
//                                    worker --store---> section_cache   (a flight's leader)
//                                    worker --work----> node_service on a cluster node, which runs
//                                           <--attempt, section_outcome--  a worker just like this one
//                                              (or a down message: the node died, retry or error)
//   coordinator <--section_outcome-- worker, which then quits
//
// Per-attempt timeouts belong to the downstream client (one timer per call); backoff is a delayed message, never a
// sleeping thread. A retry starts only if its backoff plus its whole timeout fit before the
// request's deadline. If the coordinator goes first (deadline passed, client gone), the down message
// ends the worker, and its state's destructor cancels the transfer, closing the downstream connection.
#include "gather/actors/section_worker.hpp"

#include <caf/all.hpp>

#include "gather/values/atoms.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/downstream/downstream_answer.hpp"
#include "gather/actors/messages.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/downstream/retry_rule.hpp"
#include "gather/actors/section_cache.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;
using worker_ptr = caf::stateful_actor<section_worker_state>*;

void count_cache(worker_ptr self, cache_event event) {
  auto& st = self->state;
  if (st.runtime.counters)
    st.runtime.counters->cache(st.call.route, st.call.index, event);
}

/// How much longer than the request's remaining time a worker waits for its node's reply: the
/// node's own timeouts are exact, so this covers only the network and scheduling.
constexpr millis node_reply_grace{200};

millis time_left(const section_worker_state& st) {
  return std::max(millis{1}, std::chrono::duration_cast<millis>(st.call.deadline - clock::now()));
}

void reply(worker_ptr self, section_outcome outcome) {
  auto& st = self->state;
  outcome.ms = std::chrono::duration_cast<millis>(clock::now() - st.started).count();
  // The coordinator may have answered already: this reply then lands on a dead mailbox.
  if (st.call.answered->load())
    st.runtime.stats->late_replies.fetch_add(1, std::memory_order_relaxed);
  st.promise.deliver(std::move(outcome));
  st.promised = false;
  self->quit();
}

/// A failed call whose cache entry expired recently shows that entry instead of its fallback.
void use_stale(worker_ptr self, section_outcome& outcome, std::string stale) {
  if (stale.empty())
    return;
  outcome.source = data_source::stale;
  outcome.data = std::move(stale);
  count_cache(self, cache_event::stale);
}

/// The leader of a cache flight reports its outcome, so that waiters get it and ok data is stored.
/// A failure waits for the cache's answer: it may carry stale data to show instead of the fallback.
void finish_flight(worker_ptr self, section_outcome outcome) {
  auto& st = self->state;
  const auto& shard = st.runtime.cache->shard_for(st.call.cache_key);
  const auto ttl = static_cast<std::int64_t>(st.call.cache_ttl.count());
  const auto stale = static_cast<std::int64_t>(st.call.stale_ttl.count());
  if (outcome.status == section_status::ok) {
    self->send(shard, store_atom::value, st.call.cache_key, outcome.status, outcome.data,
               outcome.attempts, outcome.last_http, ttl, stale);
    return reply(self, std::move(outcome));
  }
  self->request(shard, time_left(st), store_atom::value, st.call.cache_key, outcome.status,
                std::string{}, outcome.attempts, outcome.last_http, ttl, stale)
    .then(
      [self, outcome](std::string& stale_data) mutable {
        use_stale(self, outcome, std::move(stale_data));
        reply(self, std::move(outcome));
      },
      [self, outcome](caf::error&) mutable { reply(self, std::move(outcome)); });
}

void finish(worker_ptr self, section_outcome outcome) {
  outcome.attempts = self->state.attempts;
  if (!self->state.call.cache_key.empty())
    finish_flight(self, std::move(outcome));
  else
    reply(self, std::move(outcome));
}

void count_attempt(worker_ptr self);

void start_attempt(worker_ptr self) {
  auto& st = self->state;
  count_attempt(self);
  transfer_request request{st.call.work.url, st.call.work.headers, millis{st.call.work.timeout_ms},
                           st.call.work.max_response_bytes};
  st.span = call_span::begin(st.runtime.spans, request.headers, st.call.name, st.attempts);
  auto me = caf::actor_cast<caf::actor>(self);
  auto answered = st.call.answered;
  auto* stats = st.runtime.stats;
  // Runs on an event loop's thread: count or forward, nothing else.
  st.transfer = st.runtime.client->submit(std::move(request), [me, answered, stats](transfer_result&& r) {
    if (answered->load())
      stats->late_replies.fetch_add(1, std::memory_order_relaxed);
    else
      caf::anon_send(me, done_atom::value, std::move(r));
  });
}

void execute(worker_ptr self);

/// An attempt started, here or on a node (which reports its attempts to the worker that sent it).
void count_attempt(worker_ptr self) {
  auto& st = self->state;
  if (++st.attempts > 1 && st.runtime.counters)
    st.runtime.counters->retry(st.call.route, st.call.index);
  self->send(st.coordinator, attempt_atom::value, st.call.index);
}

void retry_or_finish(worker_ptr self, bool retryable, section_outcome outcome) {
  auto& st = self->state;
  const auto& work = st.call.work;
  auto next = decide_retry(retryable, st.attempts, retry_of(work), millis{work.timeout_ms},
                           st.call.deadline, clock::now());
  if (next.what == retry_decision::kind::retry) {
    if (next.backoff.count() == 0)
      execute(self);
    else
      self->delayed_send(self, next.backoff, retry_atom::value);
    return;
  }
  if (next.what == retry_decision::kind::too_late)
    outcome.detail += "; no retry: it would not finish before the deadline";
  finish(self, std::move(outcome));
}

void leave_node(worker_ptr self) {
  auto& st = self->state;
  if (!st.node)
    return;
  st.runtime.nodes->ended(*st.node);
  self->demonitor(st.node_actor);
  st.node.reset();
  st.node_actor = nullptr;
}

/// The node running the call died or stopped answering: like a connection error, retried (on
/// another node or here) where the policy and the deadline allow, else an error at once.
void node_failed(worker_ptr self, const std::string& why) {
  auto& st = self->state;
  const auto node = *st.node;
  leave_node(self);
  section_outcome outcome;
  outcome.status = section_status::error;
  outcome.node = st.runtime.nodes->address(node);
  outcome.detail = "node " + outcome.node + ": " + why;
  retry_or_finish(self, true, std::move(outcome));
}

void run_remote(worker_ptr self, std::size_t node, caf::actor actor) {
  auto& st = self->state;
  st.node = node;
  st.node_actor = actor;
  st.runtime.nodes->started(node);
  self->monitor(actor); // a dead node fails its work now, not at the request's timeout
  auto work = st.call.work;
  work.attempts = std::max(1, work.attempts - st.attempts); // what is left of the policy
  work.budget_ms = time_left(st).count();
  self->request(actor, time_left(st) + node_reply_grace, work_atom::value, std::move(work))
    .then(
      [self, sent = ++st.sent](section_outcome& outcome) {
        auto& st = self->state;
        if (sent != st.sent || !st.node)
          return;
        outcome.node = st.runtime.nodes->address(*st.node);
        leave_node(self);
        finish(self, std::move(outcome));
      },
      [self, sent = st.sent](caf::error& err) {
        if (sent == self->state.sent && self->state.node)
          node_failed(self, self->system().render(err));
      });
}

/// Runs the call here, or sends it to a cluster node when one is up and less busy.
void execute(worker_ptr self) {
  auto& st = self->state;
  if (st.runtime.nodes) {
    auto where = st.runtime.nodes->place();
    if (where.node)
      return run_remote(self, *where.node, std::move(where.actor));
    if (!st.counted_local) {
      st.runtime.nodes->local_started();
      st.counted_local = true;
    }
  }
  start_attempt(self);
}

void attempt_ended(worker_ptr self, transfer_result&& result) {
  auto& st = self->state;
  st.transfer = 0;
  const auto& work = st.call.work;
  auto verdict = classify_answer(std::move(result), work.fields);
  const bool retryable = verdict.retryable;
  auto outcome = outcome_of(std::move(verdict));
  st.span.finish(outcome.status, outcome.last_http);
  if (outcome.status == section_status::ok)
    return finish(self, std::move(outcome));
  retry_or_finish(self, retryable, std::move(outcome));
}

/// Cached sections ask the cache first: a hit or a joined flight needs no call of its own.
void look_up(worker_ptr self) {
  auto& st = self->state;
  self->request(st.runtime.cache->shard_for(st.call.cache_key), time_left(st), lookup_atom::value,
                st.call.cache_key)
    .then(
      [self](cache_answer& answer) {
        section_outcome outcome;
        switch (answer.what) {
          case cache_answer::kind::lead:
            count_cache(self, cache_event::miss);
            return execute(self);
          case cache_answer::kind::hit:
            count_cache(self, cache_event::hit);
            outcome.status = section_status::ok;
            outcome.source = data_source::cache;
            outcome.data = std::move(answer.data);
            return reply(self, std::move(outcome));
          case cache_answer::kind::joined:
            count_cache(self, cache_event::coalesced);
            outcome.status = answer.status;
            outcome.attempts = answer.attempts; // the shared call's, as CONTRACT §3 asks
            outcome.last_http = answer.last_http;
            outcome.detail = "joined another request's call";
            if (answer.status == section_status::ok)
              outcome.data = std::move(answer.data);
            else
              use_stale(self, outcome, std::move(answer.stale));
            return reply(self, std::move(outcome));
        }
      },
      [self](caf::error&) { execute(self); }); // no answer from the cache: call anyway
}

} // namespace

section_worker_state::~section_worker_state() {
  if (transfer != 0) {
    runtime.client->cancel(transfer);
    span.cancel();
  }
  if (node)
    runtime.nodes->ended(*node);
  if (counted_local)
    runtime.nodes->local_ended();
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
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    if (st.node && down.source == st.node_actor.address())
      return node_failed(self, "the node went down");
    if (st.promised) { // never leave a promise undelivered: it would pin this actor
      section_outcome gone;
      gone.status = section_status::timeout;
      st.promise.deliver(std::move(gone));
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
      if (st.runtime.cache && !st.call.cache_key.empty())
        look_up(self);
      else
        execute(self);
      return st.promise;
    },
    [self](done_atom, transfer_result& result) { attempt_ended(self, std::move(result)); },
    [self](retry_atom) { execute(self); },
    [self](attempt_atom, std::size_t) { count_attempt(self); }, // from the node running the call
  };
}

} // namespace gather
