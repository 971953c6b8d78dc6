// A section's attempt run on a cluster node (docs/cluster.md): it holds one bulkhead slot and counts
// in the circuit as one attempt; a node that dies or goes quiet fails it like a connection error.
// A gRPC section's work carries its message encoded here, and its answer comes back undecoded:
// the node has no descriptors, this process decodes with those its request began on.
#include <caf/all.hpp>

#include "gather/actors/messages.hpp"
#include "gather/downstream/call/call_face.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/resilience/section_guards.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/values/atoms.hpp"
#include "section_worker_steps.hpp"

namespace gather::worker_steps {

namespace {

/// How much longer than the request's remaining time a worker waits for its node's reply: the
/// node's own timeouts are exact, so this covers only the network and scheduling.
constexpr millis node_reply_grace{200};

/// The remote run ended: its node's count goes down, its slot back.
void leave_node(worker_ptr self) {
  auto& st = self->state;
  if (!st.remote)
    return;
  self->demonitor(st.remote->actor());
  st.remote.reset();
}

/// A gRPC section's work carries its call as the wire needs it: the node has no descriptors.
void add_grpc_call(section_work& work, const grpc_call_part& grpc) {
  work.grpc_path = grpc.path;
  work.grpc_message = grpc.message;
  work.grpc_max_messages = grpc.max_messages;
}

/// A gRPC section's ok outcome from a node holds the messages as they came: decoded here with the
/// descriptors the request began on, projected and cut as a call made here would be. A message
/// that does not parse as the output type fails the section as it would here (no retry).
void decode_node_answer(worker_ptr self, section_outcome& outcome) {
  const auto& st = self->state;
  if (!st.call->grpc || outcome.status != section_status::ok)
    return;
  auto data = grpc_data_of(outcome.messages, *st.call->grpc, st.call->work.fields, st.call->work.max_items);
  outcome.messages.clear();
  if (data.ok) {
    outcome.data = std::move(data.text);
    return;
  }
  outcome.status = section_status::error;
  outcome.detail = std::move(data.error);
}

} // namespace

/// The node running the call died or stopped answering: like a connection error, retried (on
/// another node or here) where the policy and the deadline allow, else an error at once.
void node_failed(worker_ptr self, const std::string& why) {
  auto& st = self->state;
  section_outcome outcome;
  outcome.node = st.remote->address();
  leave_node(self);
  circuit_record(self, true);
  outcome.status = section_status::error;
  outcome.detail = "node " + outcome.node + ": " + why;
  retry_or_finish(self, true, std::move(outcome));
}

/// Work on a node holds one bulkhead slot and counts in the circuit as one attempt; the node makes
/// its calls (and retries) itself, without hedges (docs/resilience.md).
void run_remote(worker_ptr self, std::size_t node, caf::actor actor, concurrency_limit::slot slot) {
  auto& st = self->state;
  st.remote.emplace(st.services->nodes, node, actor, std::move(slot));
  if (st.call->guard && st.runner.calls() == 0)
    st.call->guard->budget.first_attempt(clock::now());
  self->monitor(actor); // a dead node fails its work now, not at the request's timeout
  auto work = st.call->work;
  work.attempts = std::max(1, work.attempts - st.runner.calls()); // what is left of the policy
  work.budget_ms = time_left(st).count();
  if (st.call->grpc)
    add_grpc_call(work, *st.call->grpc);
  self->request(actor, time_left(st) + node_reply_grace, work_atom::value, std::move(work))
    .then(
      [self, sent = ++st.sent](section_outcome& outcome) {
        auto& st = self->state;
        if (sent != st.sent || !st.remote)
          return;
        outcome.node = st.remote->address();
        leave_node(self);
        decode_node_answer(self, outcome);
        circuit_record(self, outcome.status != section_status::ok);
        finish(self, std::move(outcome));
      },
      [self, sent = st.sent](caf::error& err) {
        if (sent == self->state.sent && self->state.remote)
          node_failed(self, self->system().render(err));
      });
}

} // namespace gather::worker_steps
