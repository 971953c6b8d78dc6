#include "grpc_section_part.hpp"

#include <algorithm>

#include "gather/actors/serving_config.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

namespace gather {

namespace {

/// A write's body that its message cannot hold: no call, the client told which field.
section_outcome bad_body(const grpc_call_config& grpc, const std::string& why) {
  section_outcome out;
  out.status = section_status::rejected;
  out.not_made = not_made_reason::bad_body;
  out.detail = "the body does not fit " + grpc.full_method() + "'s request: " + why;
  return out;
}

/// "message.a.b: why" as the client wrote it: "body.x: why" when the field is a whole `{body.x}`
/// (or the whole body is the message).
std::string body_named(const grpc_call_config& grpc, const std::string& problem) {
  const auto colon = problem.find(": ");
  const auto path = problem.substr(0, colon);
  for (const auto& placeholder : grpc.placeholders) {
    if (!placeholder.whole || placeholder.text.parts.front().what != url_part::kind::body)
      continue;
    std::string at = "message" + placeholder.pointer; // "/a/b" -> "message.a.b"
    std::replace(at.begin() + 7, at.end(), '/', '.');
    if (path.rfind(at, 0) != 0 || (path.size() > at.size() && path[at.size()] != '.' && path[at.size()] != '['))
      continue;
    std::string body = "body";
    for (const auto& key : placeholder.text.parts.front().field)
      body += "." + key;
    return body + path.substr(at.size()) + problem.substr(colon);
  }
  return problem;
}

} // namespace

std::variant<std::shared_ptr<const grpc_call_part>, section_outcome>
grpc_section_part(const serving_config& serving, std::size_t route, std::size_t index,
                  const grpc_call_config& grpc, const grpc::value_resolver& resolve,
                  std::string& cache_text, bool write) {
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
  if (!message && write)
    return bad_body(grpc, "a value the body gives is not one the message can hold as text");
  if (!message) {
    section_outcome skipped;
    skipped.status = section_status::skipped;
    skipped.detail = "a field the message reads is absent or not a scalar";
    return skipped;
  }
  const grpc::message_types types{*catalog->resolver, *catalog->factory, catalog->orders.get()};
  auto bytes = grpc::encode_message(types, *(*plan)->method->input_type(), *message);
  if (!bytes.ok && write) {
    const auto problems = message_problems(*message, *(*plan)->method->input_type(), "message");
    return bad_body(grpc, problems.empty() ? bytes.error : body_named(grpc, problems.front()));
  }
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
