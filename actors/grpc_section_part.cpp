#include "grpc_section_part.hpp"

#include <algorithm>

#include "gather/actors/serving_config.hpp"
#include "gather/downstream/proto_catalog.hpp"

namespace gather {

std::variant<std::shared_ptr<const grpc_call_part>, section_outcome>
grpc_section_part(const serving_config& serving, std::size_t route, std::size_t index,
                  const grpc_call_config& grpc, const grpc::value_resolver& resolve,
                  std::string& cache_text) {
  auto catalog = serving.descriptors();
  const auto* plan = catalog ? &catalog->sections[route][index] : nullptr;
  section_outcome refused;
  refused.status = section_status::error;
  if (!plan || !*plan) {
    // No call and no wait: reflection may find the method for a later request.
    serving.unknown_method(grpc);
    refused.detail = "grpc: " + grpc.full_method() + " is not known (no descriptors name it" +
                     (grpc.reflection ? "; its target's reflection is asked" : "") + ")";
    return refused;
  }
  auto message = grpc::render_message(grpc, (*plan)->as_text, resolve);
  if (!message) {
    section_outcome skipped;
    skipped.status = section_status::skipped;
    skipped.detail = "a field the message reads is absent or not a scalar";
    return skipped;
  }
  const grpc::message_types types{*catalog->resolver, *catalog->factory};
  auto bytes = grpc::encode_message(types, *(*plan)->method->input_type(), *message);
  if (!bytes.ok) {
    refused.detail = "grpc message: " + bytes.error;
    return refused;
  }
  auto part = std::make_shared<grpc_call_part>();
  part->catalog = catalog;
  part->plan = &**plan;
  part->path = "/" + grpc.full_method();
  part->message = std::move(bytes.text);
  part->max_messages = (*plan)->server_streaming() ? std::max<std::size_t>(1, grpc.max_messages) : 0;
  // The cache key: the method, the rendered message (and, as for a URL, the forwarded headers).
  cache_text = grpc.target + part->path + "\n" + message->dump();
  return part;
}

} // namespace gather
