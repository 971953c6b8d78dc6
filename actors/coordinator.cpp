// The coordinator: one actor per inbound aggregate request, from fan-out to answer.
//
//   HTTP front (a connection on an event loop; it waits for nothing, it holds a pending read)
//          |  spawn(job)          deadline_atom          ^ reply_sink.deliver(reply): posted to
//          v                      (the connection's      |   the connection's loop, never waited on
//   +-------------------------+    timer, at the         |
//   |       coordinator       |<---route's deadline)-----+
//   +-------------------------+
//      | spawn (the worker starts       ^ (outcome_atom, index, section_outcome): one plain
//      v  as it is spawned)             |   message per worker, no request and no `then`
//   worker[base]  worker[price]  ...  worker[coupon]  (spawned once their dependencies ended ok)
//
// Besides messages, the request's actors share one request_progress: the coordinator sets
// `answered` (a worker's later reply is then counted as late), each worker counts the calls its
// section started (what the coordinator reports for a section it cuts short).
//
// Life: spawn the workers of every section that depends on nothing; on each outcome start the
// sections it unblocked (or mark them `skipped`); answer as soon as every section has ended, a
// required section has failed, or the deadline message comes (still-running sections become
// `timeout`, waiting ones `skipped`); then quit. A write route's write (write_part.hpp) is its last
// section, which every other waits for: it runs first and alone, and once sent only its timeout or
// the deadline ends it (the state's end leaves it running: the client going does not cancel it). As its state goes, it sends an exit to the workers
// still running, which cancel their downstream calls; a reply arriving later lands on a dead mailbox.
//
// A progressive answer (job.format ndjson or sse) lives the same life; each section's event is
// made the moment the section ends (progressive_answer) and sent through the sink, the head first
// once every required section has ended ok; the last event replaces the whole answer. A client
// that hangs up mid-answer makes the front stop the coordinator: its exit handler logs the 499.
//
// Why a plain message and not a request: a request costs each section a request id, a response
// handler and a promise, and an `await` on it would hold back every other message, the deadline
// included, until its reply comes (docs/actors.md). Why the deadline comes from the front: the
// connection's timer is on an event loop that is awake anyway, where CAF's delayed_send is an entry
// on its clock thread, a thread wake-up per request (docs/performance.md).
#include "gather/actors/coordinator.hpp"
#include "gather/answer/progressive_answer.hpp"

#include <caf/all.hpp>

#include "gather/answer/aggregate_response.hpp"
#include "gather/values/atoms.hpp"
#include "gather/downstream/call/downstream_request.hpp"
#include "gather/actors/messages.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/quiet_spawn.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/config/url_template.hpp"
#include "grpc_section_part.hpp"
#include "write_part.hpp"

#include <variant>

namespace gather {

namespace {

using clock = std::chrono::steady_clock;
using coordinator_ptr = caf::stateful_actor<coordinator_state>*;
using phase = coordinator_state::phase;

std::int64_t ms_since(steady_time t) {
  return std::chrono::duration_cast<millis>(clock::now() - t).count();
}

void finish(coordinator_state& st, std::size_t i, section_outcome&& outcome);
section_outcome skipped(std::string why);
void hung_up(coordinator_ptr self);

/// Marks every section still open as ended `why` (with the attempts it started), so the log and the
/// metrics show it cancelled, not as a 0 ms "skipped" that never ran.
void cancel_open(coordinator_state& st, const char* why) {
  for (std::size_t i = 0; i < st.sections.size(); ++i) {
    if (st.sections[i].at == phase::done)
      continue;
    auto outcome = skipped(why);
    if (st.sections[i].at == phase::running) {
      outcome.attempts = st.progress->calls_started(i);
      outcome.ms = ms_since(st.sections[i].started);
    }
    finish(st, i, std::move(outcome));
  }
}

/// Every required section has ended ok: a progressive answer's head may leave.
bool required_ok(const coordinator_state& st) {
  const auto& sections = st.job->route->sections;
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (sections[i].required && (st.sections[i].at != phase::done || st.outcomes[i].status != section_status::ok))
      return false;
  return true;
}

/// A progressive answer: sends the events made so far, opening the answer first once every
/// required section has ended ok (before that, a required failure must still be able to answer
/// with the ordinary error).
void send_events(coordinator_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  if (!st.opened) {
    if (!required_ok(st) || !job.reply->claim())
      return;
    st.opened = true;
    http_reply head;
    head.content_type = media_type(job.format);
    job.serving->counters.streamed(job.route_index, job.format);
    job.reply->open(std::move(head));
  }
  for (auto& event : st.pending)
    job.reply->write(std::move(event));
  st.pending.clear();
}

void answer(coordinator_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  st.progress->answered.store(true, std::memory_order_relaxed);
  // A required section failed first: what is still open is cancelled.
  cancel_open(st, "cancelled: a required section failed first");
  if (st.stream) {
    send_events(self);
    if (st.opened) { // the last line; the request is counted and logged as the 200 it is
      job.reply->record().finish(200, job.route->sections, st.outcomes);
      job.reply->end(st.stream->done(st.outcomes, job.inbound.request_id));
      self->quit();
      return;
    }
  }
  if (!job.reply->claim()) { // the front gave up first (client gone, hard limit): its line
    self->quit();
    return;
  }
  auto reply = build_aggregate_reply(*job.route, st.outcomes, job.inbound.request_id);
  job.reply->record().finish(reply.status, job.route->sections, st.outcomes);
  job.reply->deliver(std::move(reply));
  self->quit();
}

/// The client hung up in the middle of a progressive answer (the front stops the coordinator):
/// what still runs is cancelled, and the request is counted and logged as a 499.
void hung_up(coordinator_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  st.progress->answered.store(true, std::memory_order_relaxed);
  cancel_open(st, "cancelled: the client hung up");
  job.services.stats.client_gone.fetch_add(1, std::memory_order_relaxed);
  job.reply->record().finish(499, job.route->sections, st.outcomes);
}

/// The request is decided once every section has ended, or once the first required section in
/// route order that did not end ok is known (the error it names cannot change any more).
bool decided(const coordinator_state& st) {
  if (st.open == 0)
    return true;
  const auto& sections = st.job->route->sections;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!sections[i].required)
      continue;
    if (st.sections[i].at != phase::done)
      return false;
    if (st.outcomes[i].status != section_status::ok)
      return true;
  }
  return false;
}

void finish(coordinator_state& st, std::size_t i, section_outcome&& outcome) {
  if (st.sections[i].at == phase::done)
    return;
  st.sections[i].at = phase::done;
  st.outcomes[i] = std::move(outcome);
  st.inflight->pending[i].store(false, std::memory_order_relaxed);
  --st.open;
  if (st.stream) // the section's event (and any that waited for its data), in the order they end
    for (auto& event : st.stream->ended(i, st.outcomes))
      st.pending.push_back(std::move(event));
}

section_outcome skipped(std::string why) {
  section_outcome outcome;
  outcome.status = section_status::skipped;
  outcome.detail = std::move(why);
  return outcome;
}

/// Section `i`'s live data, parsed once for the sections that read it.
const nlohmann::json* data_of(coordinator_state& st, std::size_t i) {
  if (!st.sections[i].parsed)
    st.sections[i].parsed = nlohmann::json::parse(st.outcomes[i].data, nullptr, false);
  return st.sections[i].parsed->is_discarded() ? nullptr : &*st.sections[i].parsed;
}

std::optional<std::string> resolve(coordinator_state& st, const url_part& part) {
  if (part.what != url_part::kind::section)
    return inbound_value(part, st.job->inbound);
  const auto* data = data_of(st, part.section);
  const auto* field = data ? find_field(*data, part.field) : nullptr;
  return field ? scalar_text(*field) : std::nullopt;
}

/// A placeholder's value for a gRPC message: text from the inbound request, a scalar of another
/// section's data with its own JSON type.
std::optional<nlohmann::json> resolve_value(coordinator_state& st, const url_part& part) {
  if (part.what != url_part::kind::section) // a body's field keeps its JSON type
    return inbound_json_value(part, st.job->inbound);
  const auto* data = data_of(st, part.section);
  const auto* field = data ? find_field(*data, part.field) : nullptr;
  if (!field || !(field->is_string() || field->is_number() || field->is_boolean()))
    return std::nullopt;
  return *field;
}

void on_outcome(coordinator_ptr self, std::size_t i, section_outcome&& outcome);

void launch(coordinator_ptr self, std::size_t i) {
  auto& st = self->state;
  const auto& section = st.job->route->sections[i];
  std::shared_ptr<const grpc_call_part> grpc;
  std::optional<std::string> url;
  if (section.grpc) {
    url.emplace();
    auto part = grpc_section_part(*st.job->serving, st.job->route_index, i, *section.grpc,
                                  [&](const url_part& part) { return resolve_value(st, part); }, *url,
                                  section.write);
    if (auto* ended = std::get_if<section_outcome>(&part))
      return finish(st, i, std::move(*ended));
    grpc = std::move(std::get<0>(part));
  } else {
    url = render_url(section.url, [&](const url_part& part) { return resolve(st, part); });
  }
  if (!url)
    return finish(st, i, skipped("a field the url reads is absent or not a scalar"));
  if (!st.lines_for || *st.lines_for != section.forward_headers) {
    st.header_lines = downstream_header_lines(section.forward_headers, st.job->inbound,
                                              st.job->serving->deadline_header());
    st.lines_for = &section.forward_headers;
  }
  auto made = make_section_call(section, st.job->route_index, i, std::move(*url), st.header_lines,
                                st.job->inbound, st.deadline, st.progress, *st.job->serving);
  auto& call = *made;
  if (grpc) { // the key was made from the message; the call goes to the target
    call.work.url = section.grpc->target;
    call.grpc = std::move(grpc);
  }
  if (!section.write)
    keep_idempotency_key_from_reads(call, section);
  else if (auto ended = prepare_write(call, section, st.job->inbound))
    return finish(st, i, std::move(*ended));
  auto worker = quiet_spawn(self->system(), self->context(), section_worker,
                            caf::actor_cast<caf::actor>(self), std::ref(st.job->services),
                            st.job->serving, std::move(made));
  st.sections[i].worker = worker;
  st.sections[i].at = phase::running;
  st.sections[i].started = clock::now();
  // The worker starts as it is spawned and sends (outcome_atom, i, outcome) once: no request, so
  // no response promise, response handler or request id per section. No timeout either: its
  // attempts have exact timeouts of their own (the client's), and the deadline message bounds
  // everything else.
}

/// Starts every waiting section whose dependencies have all ended; answers once decided.
void advance(coordinator_ptr self) {
  auto& st = self->state;
  const auto& sections = st.job->route->sections;
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (std::size_t i = 0; i < sections.size(); ++i) {
      if (st.sections[i].at != phase::waiting)
        continue;
      bool ready = true, usable = true;
      for (auto dep : sections[i].depends_on) {
        ready = ready && st.sections[dep].at == phase::done;
        usable = usable && st.outcomes[dep].status == section_status::ok;
      }
      if (!ready)
        continue;
      progressed = true;
      if (usable)
        launch(self, i);
      else
        finish(st, i, skipped("a section it depends on did not end ok"));
    }
  }
  if (decided(st))
    return answer(self);
  if (st.stream)
    send_events(self);
}

void on_outcome(coordinator_ptr self, std::size_t i, section_outcome&& outcome) {
  self->state.sections[i].worker = nullptr; // it has quit
  finish(self->state, i, std::move(outcome));
  advance(self);
}

void on_deadline(coordinator_ptr self) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.sections.size(); ++i) {
    if (st.sections[i].at == phase::waiting) {
      finish(st, i, skipped("deadline passed while waiting for a dependency"));
    } else if (st.sections[i].at == phase::running) {
      if (st.job->route->sections[i].write) { // the deadline ends a write (the client's going does not)
        self->send_exit(st.sections[i].worker, caf::exit_reason::user_shutdown);
        st.sections[i].worker = nullptr;
      }
      section_outcome outcome;
      outcome.status = section_status::timeout;
      outcome.attempts = st.progress->calls_started(i); // counted by the workers
      outcome.ms = ms_since(st.sections[i].started);
      outcome.detail = "deadline passed";
      finish(st, i, std::move(outcome));
    }
  }
  answer(self);
}

/// The start gate decided (a shared limit's exact mode): the sections start, or the request ends
/// with the gate's refusal.
void gate_decided(coordinator_ptr self) {
  auto& st = self->state;
  const auto& job = *st.job;
  const auto& refused = job.gate->refusal();
  if (!refused) {
    advance(self);
    return;
  }
  st.progress->answered.store(true, std::memory_order_relaxed);
  if (job.reply->claim()) { // else the front gave up first: its line
    if (refused->rate_limited)
      job.serving->counters.rate_limited(job.route_index);
    job.reply->record().finish(refused->reply.status, refused->detail);
    job.reply->deliver(refused->reply);
  }
  self->quit();
}

} // namespace

coordinator_state::~coordinator_state() {
  // Sections cut short by the answer: their workers cancel their calls and quit. (A message only
  // to those still running, where a monitor per worker cost every worker an attachment to the
  // coordinator and the coordinator's exit a down message per worker, ended or not.)
  // A write once sent is not cancelled (its timeout, bounded by the deadline, ends it).
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (sections[i].worker && !(job && job->route->sections[i].write))
      caf::anon_send_exit(sections[i].worker, caf::exit_reason::user_shutdown);
  if (!job)
    return;
  job->services.stats.coordinators.fetch_sub(1, std::memory_order_relaxed);
  job->services.inflight.remove(inflight.get());
}

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self,
                          std::shared_ptr<const aggregate_job> job) {
  auto& st = self->state;
  const auto n = job->route->sections.size();
  job->services.stats.coordinators.fetch_add(1, std::memory_order_relaxed);
  st.job = std::move(job);
  st.progress = std::make_shared<request_progress>(n);
  // The entry shares the generation's ownership: /debug/actors may read its route after the request.
  st.inflight = std::make_shared<inflight_entry>(
    st.job->inbound.request_id, std::shared_ptr<const route_config>(st.job->serving, st.job->route),
    st.job->inbound.arrived);
  st.job->services.inflight.add(st.inflight);
  st.deadline = st.job->deadline;
  st.sections.resize(n); // each waiting
  st.outcomes.resize(n);
  st.open = n;
  if (st.job->format != answer_format::json) {
    st.stream = std::make_shared<progressive_answer>(*st.job->route, st.job->format);
    // Stopped by the front (a client that hung up mid-answer, or gone before it began).
    self->set_exit_handler([self](caf::exit_msg& msg) {
      if (self->state.opened && !self->state.progress->answered.load(std::memory_order_relaxed))
        hung_up(self);
      self->quit(msg.reason);
    });
  }
  if (st.job->gate) // nothing starts before it decides; it answers within the store's timeout
    st.job->gate->wait([me = caf::actor_cast<caf::actor>(self)] { caf::anon_send(me, gate_atom::value); });
  else
    advance(self); // the deadline message comes from the front (see aggregate_job)
  return {
    [self](outcome_atom, std::size_t i, section_outcome& outcome) {
      if (i < self->state.sections.size())
        on_outcome(self, i, std::move(outcome));
    },
    [self](deadline_atom) { on_deadline(self); },
    [self](gate_atom) { gate_decided(self); },
  };
}

} // namespace gather
