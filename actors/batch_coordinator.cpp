// The batch coordinator: one actor per inbound batch request, from its first item call to its answer.
//
//   HTTP front (body parsed, items planned into distinct calls)
//          |  spawn(job)     deadline_atom (the connection's timer)   ^ reply_sink.deliver(reply)
//          v                                                          |
//   +-------------------------+<--------------------------------------+
//   |    batch coordinator    |  retry_atom(c) (delayed, to itself: call c's backoff)
//   +-------------------------+
//      | call c (URL or gRPC)             ^ done_atom(c, seq, answer_verdict)
//      v                                 |
//   attempt_runner c -> call_face -> downstream_client (on the event loops; at most
//                                    `concurrency` calls of this batch)
//
// Life: start the first `concurrency` calls; whenever a call ends (ok, or failed with no retry
// allowed) start the next waiting one, so the window slides and never waits for a whole chunk;
// answer once every call has ended or the deadline passes (calls still running, or in backoff,
// become `timeout` with the attempts they started; calls never started `timeout` with 0); quit.
// Each call's attempts are an attempt_runner, the section worker's own (attempt_runner.hpp): its
// calls, spans and the retry step; the state's runners cancel what is in flight, however the
// actor ends.
// A progressive answer (job.format ndjson) opens at once, sends each row's event as its call
// ends (rows sharing a call, together) and ends with the counts.
//
// No actor per item: a batch call needs no coordination of its own, so one actor drives them all
// through their runners. The window is a counter, cancelling is the runners' end, and 1000 items
// cost one mailbox, not 1000 actors. What a call shares with a section (the attempt runner, the
// call face, classification, the retry rule) lives in attempt_runner.hpp, call_face.hpp,
// downstream_answer.hpp and retry_rule.hpp. Every message is a plain send: nothing here ever
// waits for a reply, so the deadline always runs on time.
#include "gather/actors/batch_coordinator.hpp"

#include <string>

#include <caf/all.hpp>

#include "gather/resilience/section_guards.hpp"

#include "gather/values/atoms.hpp"
#include "gather/answer/batch_response.hpp"
#include "gather/answer/progressive_answer.hpp"
#include "gather/downstream/call/call_face.hpp"
#include "gather/downstream/answer/downstream_answer.hpp"
#include "gather/downstream/call/downstream_request.hpp"
#include "gather/actors/messages.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/ops/metrics.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;
using batch_ptr = caf::stateful_actor<batch_coordinator_state>*;
using phase = batch_coordinator_state::phase;

std::int64_t ms_since(steady_time t) {
  return std::chrono::duration_cast<millis>(clock::now() - t).count();
}

const batch_config& batch_of(const batch_coordinator_state& st) {
  return *st.job->route->batch;
}

/// A progressive answer: call `c` has ended, each row it serves is one event.
void send_rows(batch_ptr self, std::size_t c) {
  auto& st = self->state;
  if (!st.opened)
    return;
  const auto& job = *st.job;
  for (auto row : st.rows_of_call[c])
    job.reply->write(batch_row_event(job.format, row, job.plan.rows[row], st.outcomes[c]));
}

/// A progressive answer's head leaves at once: a batch has no required part to wait for.
void open_stream(batch_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  if (job.format == answer_format::json || !job.reply->claim())
    return;
  st.opened = true;
  st.rows_of_call.resize(job.plan.urls.size());
  for (std::size_t row = 0; row < job.plan.call_of_row.size(); ++row)
    st.rows_of_call[job.plan.call_of_row[row]].push_back(row);
  http_reply head;
  head.content_type = media_type(job.format);
  job.serving->counters.streamed(job.route_index, job.format);
  job.reply->open(std::move(head));
}

void answer(batch_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  st.answered->store(true);
  if (st.opened) {
    job.reply->record().finish(200, job.plan, st.outcomes);
    job.reply->end(batch_done_event(job.format, count_rows(job.plan, st.outcomes), job.plan.rows.size()));
    self->quit();
    return;
  }
  if (!job.reply->claim()) { // the front gave up first (client gone, hard limit): its line
    self->quit();
    return;
  }
  auto reply = build_batch_reply(job.plan, st.outcomes);
  job.reply->record().finish(reply.status, job.plan, st.outcomes);
  job.reply->deliver(std::move(reply));
  self->quit();
}

void finish(batch_ptr self, std::size_t c, section_outcome outcome);

void start_attempt(batch_ptr self, std::size_t c) {
  auto& st = self->state;
  auto& services = st.job->services;
  const auto& serving = *st.job->serving;
  const auto& plan = st.job->plan;
  const auto& batch = batch_of(st);
  const auto grpc = plan.grpc.empty() ? nullptr : plan.grpc[c];
  if (!plan.grpc.empty() && !grpc) { // its message could not be made: no call
    section_outcome refused;
    refused.status = section_status::error;
    refused.detail = plan.refused[c];
    return finish(self, c, std::move(refused));
  }
  const auto now = clock::now();
  auto& runner = st.runners[c];
  runner.begin_attempt(now, st.budget);
  call_description call;
  call.url = grpc ? batch.grpc->target : plan.urls[c];
  call.timeout = batch.timeout;
  call.left = std::chrono::duration_cast<millis>(st.deadline - now);
  call.max_response_bytes = serving.max_response_bytes();
  call.fields = batch.fields;
  call.http2 = batch.http2;
  call.grpc = grpc;
  call.upstream = serving.batch_upstream(st.job->route_index);
  call.deadline_header = serving.deadline_header();
  static const std::string none;
  call.header_lines = call_header_lines(st.header_lines, grpc ? none : serving.deadline_header(), // gRPC: grpc-timeout
                                        batch.timeout, st.deadline - now);
  static const std::string span_name = "batch";
  runner.launch(std::move(call), call_labels{&services.spans, &span_name, nullptr},
                call_return{caf::actor_cast<caf::actor>(self), st.answered, &services.stats, c},
                std::nullopt, concurrency_limit::slot{}, now);
}

/// Starts waiting calls, in order, while fewer than `concurrency` are running.
void fill_window(batch_ptr self) {
  auto& st = self->state;
  const auto concurrency = batch_of(st).concurrency;
  while (st.running < concurrency && st.next_call < st.phases.size()) {
    const auto c = st.next_call++;
    st.phases[c] = phase::running;
    st.started[c] = clock::now();
    ++st.running;
    start_attempt(self, c);
  }
}

void finish(batch_ptr self, std::size_t c, section_outcome outcome) {
  auto& st = self->state;
  outcome.attempts = st.runners[c].calls();
  outcome.ms = ms_since(st.started[c]);
  st.outcomes[c] = std::move(outcome);
  st.phases[c] = phase::done;
  --st.running;
  send_rows(self, c);
  if (--st.open == 0)
    return answer(self);
  fill_window(self);
}

void attempt_ended(batch_ptr self, std::size_t c, std::uint32_t seq, answer_verdict&& verdict) {
  auto& st = self->state;
  steady_time started;
  call_span span;
  if (!st.runners[c].end_call(seq, started, span)) { // no longer running: its answer is late
    st.job->services.stats.late_replies.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const auto& batch = batch_of(st);
  const bool retryable = verdict.retryable;
  auto outcome = outcome_of(std::move(verdict));
  span.finish(outcome.status, outcome.last_http, outcome.grpc_code);
  if (outcome.status == section_status::ok)
    return finish(self, c, std::move(outcome));
  switch (st.runners[c].after_failure(self, c, retryable, batch.retry, batch.timeout, st.deadline,
                                      st.budget, outcome)) {
    case retry_step::now:
      return start_attempt(self, c);
    case retry_step::later: // (retry_atom, c) after the backoff
      return;
    case retry_step::none:
      break;
  }
  finish(self, c, std::move(outcome));
}

void on_deadline(batch_ptr self) {
  auto& st = self->state;
  for (std::size_t c = 0; c < st.phases.size(); ++c) {
    if (st.phases[c] == phase::done)
      continue;
    const bool started = st.phases[c] == phase::running;
    auto& outcome = st.outcomes[c];
    outcome.attempts = st.runners[c].calls(); // as they started (0 if never started)
    outcome.status = section_status::timeout;
    outcome.ms = started ? ms_since(st.started[c]) : 0;
    outcome.detail = started ? "deadline passed" : "deadline passed before it started";
    st.phases[c] = phase::done;
    send_rows(self, c);
  }
  answer(self);
}

/// The answer's head (a progressive one), then the first calls.
void begin(batch_ptr self) {
  auto& st = self->state;
  open_stream(self);
  if (st.opened) // stopped by the front mid-answer: the client hung up; counted and logged as 499
    self->set_exit_handler([self](caf::exit_msg& msg) {
      auto& st = self->state;
      if (!st.answered->exchange(true)) {
        const auto& job = *st.job;
        job.services.stats.client_gone.fetch_add(1, std::memory_order_relaxed);
        job.reply->record().finish(499, job.plan, st.outcomes);
      }
      self->quit(msg.reason);
    });
  if (st.open == 0)
    answer(self); // an empty batch: nothing to wait for
  else
    fill_window(self); // the deadline message comes from the front (see batch_job)
}

/// The start gate decided (a shared limit's exact mode): the batch begins, or ends with the
/// gate's refusal.
void gate_decided(batch_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  const auto& refused = job.gate->refusal();
  if (!refused)
    return begin(self);
  if (!st.answered->exchange(true) && job.reply->claim()) {
    if (refused->rate_limited)
      job.serving->counters.rate_limited(job.route_index);
    job.reply->record().finish(refused->reply.status, refused->detail);
    job.reply->deliver(refused->reply);
  }
  self->quit();
}

} // namespace

batch_coordinator_state::~batch_coordinator_state() {
  if (!job)
    return;
  runners.clear(); // each cancels its calls still in flight (their spans end "cancelled")
  job->services.stats.coordinators.fetch_sub(1, std::memory_order_relaxed);
}

caf::behavior batch_coordinator(caf::stateful_actor<batch_coordinator_state>* self,
                                std::shared_ptr<const batch_job> job) {
  auto& st = self->state;
  const auto calls = job->plan.urls.size();
  job->services.stats.coordinators.fetch_add(1, std::memory_order_relaxed);
  st.job = std::move(job);
  const auto& batch = batch_of(st);
  st.deadline = st.job->deadline;
  st.header_lines = downstream_header_lines(batch.forward_headers, st.job->inbound, st.job->serving->deadline_header());
  st.budget = &st.job->serving->guards.batch_budget(st.job->route_index);
  st.phases.assign(calls, phase::waiting);
  st.outcomes.resize(calls);
  st.started.resize(calls);
  st.runners.reserve(calls);
  for (std::size_t c = 0; c < calls; ++c)
    st.runners.emplace_back(st.job->services.client);
  st.open = calls;
  if (st.job->gate) // nothing starts before it decides; it answers within the store's timeout
    st.job->gate->wait([me = caf::actor_cast<caf::actor>(self)] { caf::anon_send(me, gate_atom::value); });
  else
    begin(self);
  return {
    [self](gate_atom) { gate_decided(self); },
    [self](done_atom, std::size_t c, std::uint32_t seq, answer_verdict& verdict) {
      attempt_ended(self, c, seq, std::move(verdict));
    },
    [self](retry_atom, std::size_t c) { start_attempt(self, c); },
    [self](deadline_atom) { on_deadline(self); },
  };
}

} // namespace gather
