// Registration of the custom types Gather's actors exchange (CAF 0.17 needs an inspect() for each
// and add_message_type on every actor system that sees them).
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include "gather/downstream/answer/downstream_answer.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transfer_result& x) {
  return f(caf::meta::type_name("gather.transfer_result"), x.error, x.http_status, x.body, x.detail);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, answer_verdict& x) {
  return f(caf::meta::type_name("gather.answer_verdict"), x.status, x.retryable, x.data,
           x.http_status, x.grpc_code, x.detail, x.messages);
}

void register_message_types(caf::actor_system_config& cfg);

/// Middleman heartbeats and a connection timeout, so that a frozen peer is noticed (without them
/// CAF never notices one); set on gateways with a cluster and on nodes alike.
void enable_failure_detection(caf::actor_system_config& cfg);

} // namespace gather
