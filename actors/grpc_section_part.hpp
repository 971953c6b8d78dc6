// A gRPC section's call for one request (docs/grpc.md): its message rendered from the section's
// template and encoded as its method's input type with the descriptors of the request's
// generation, which the call then holds. Made by the coordinator when the section starts.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <variant>

#include "gather/downstream/call/call_face.hpp"
#include "gather/downstream/grpc/grpc_json.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

struct serving_config;

/// Section `index` of route `route` in `serving`, whose `grpc` object is `grpc`: its call, with `cache_text` set to what its
/// cache key is made of (the target, the method and the rendered message); or, when the call
/// cannot be made, the section's end with no call (`error` with its reason for the log, or
/// `skipped` when a value the message reads is missing). `resolve` gives each placeholder's value.
/// A write (`write`) whose body does not fit its message ends `rejected` with not_made
/// `bad_body` and a detail naming the field, fit for the client's 400.
std::variant<std::shared_ptr<const grpc_call_part>, section_outcome>
grpc_section_part(const serving_config& serving, std::size_t route, std::size_t index,
                  const grpc_call_config& grpc, const grpc::value_resolver& resolve,
                  std::string& cache_text, bool write = false);

} // namespace gather
