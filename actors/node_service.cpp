// The node service: a cluster node's published actor.
//
//   gateway worker --hello(version)--> node_service --hello(version)--> gateway (a link thread)
//   gateway worker --work(section_work)--> node_service --spawn--> section_worker
//                                          (delegated: the worker answers the gateway worker itself,
//                                           sends it attempt messages (and a gRPC call's code as
//                                           each call ends), and monitors it: if the gateway worker
//                                           goes, the call is cancelled)
//
// The node's worker is the gateway's section worker: its calls go through the same attempt
// runner and call face (attempt_runner.hpp), unguarded (the gateway guards and counts them).
// A gRPC section's work comes with its request message already encoded: the node has no
// descriptors, so it makes the call as the work says and answers with the messages undecoded;
// the gateway's worker decodes them with the descriptors its request began on.
#include <caf/all.hpp>

#include "gather/values/atoms.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/actors/messages.hpp"
#include "gather/actors/section_worker.hpp"
#include "gather/cluster/worker_node.hpp"
#include "gather/downstream/call/call_face.hpp"

namespace gather {

caf::behavior node_service(caf::event_based_actor* self, const process_services& services,
                           std::shared_ptr<const serving_config> serving) {
  return {
    [](hello_atom, std::int32_t) -> caf::result<hello_atom, std::int32_t> {
      return {hello_atom::value, cluster_protocol_version};
    },
    [self, &services, serving](work_atom, section_work& work) {
      auto requester = caf::actor_cast<caf::actor>(self->current_sender());
      auto made = std::make_unique<section_call>();
      auto& call = *made;
      call.deadline = std::chrono::steady_clock::now() + millis{work.budget_ms};
      call.work = std::move(work);
      call.progress = std::make_shared<request_progress>(0); // its attempts: counted by message
      if (!call.work.grpc_path.empty()) { // no descriptors here: the messages go back undecoded
        auto part = std::make_shared<grpc_call_part>();
        part->path = std::move(call.work.grpc_path);
        part->message = std::move(call.work.grpc_message);
        part->max_messages = static_cast<std::size_t>(call.work.grpc_max_messages);
        call.grpc = std::move(part);
      }
      auto worker = self->spawn(section_worker, requester, std::ref(services), serving, std::move(made));
      return self->delegate(worker, run_atom::value);
    },
  };
}

} // namespace gather
