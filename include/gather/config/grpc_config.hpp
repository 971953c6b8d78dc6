// `grpc` sections and `protos` (docs/grpc.md) as typed values: a gRPC method called instead of a
// URL, and where its message types come from. Read and checked with the rest of the
// configuration (load_config, config.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/template_parts.hpp"

namespace gather {

/// A string of a gRPC message template that holds placeholders (docs/grpc.md).
struct message_placeholder {
  std::string pointer; ///< JSON pointer to the string inside `grpc_call_config::message`
  url_template text;   ///< its parts: literal text and placeholders (`source` as written)
  /// The string is exactly one placeholder: its value keeps its own JSON type where the field is
  /// not a string (a number stays a number), and is text in a string field.
  bool whole = false;
};

/// `grpc` (docs/grpc.md): a gRPC method called instead of a URL.
struct grpc_call_config {
  std::string target;  ///< "http://host:port" or "https://host:port" as written
  std::string service; ///< "package.Service"
  std::string method;  ///< "Method"
  /// The request message in the proto3 JSON mapping, placeholders as written.
  nlohmann::json message = nlohmann::json::object();
  std::vector<message_placeholder> placeholders; ///< every string of `message` holding one
  std::size_t max_messages = 0; ///< server streaming: cancel after this many; 0: not given
  bool reflection = false;      ///< the target's descriptors are asked for by server reflection
  /// "package.Service/Method", as the call's :path writes it after its "/".
  std::string full_method() const { return service + "/" + method; }
};

/// `protos.reflection` (docs/grpc.md, "Server reflection"): the bounds of the asks made of the
/// targets with `"reflection": true`.
struct reflection_limits {
  millis call_timeout{5000};             ///< one reflection call, connect to trailers
  std::size_t max_bytes = 16 * 1024 * 1024; ///< one call's answer
  std::size_t max_calls = 64;            ///< calls per ask (symbols, then the files imports name)
  /// A method no descriptor names asks its target again at most this often, so that requests
  /// naming made-up methods cannot turn the gateway into a load generator against the server.
  millis pace{10000};
  millis start_wait{5000}; ///< how long `gather serve` waits at start for the first answers
};

/// `protos` (docs/grpc.md): where the gRPC sections' message types come from.
struct protos_config {
  std::vector<std::string> descriptor_sets; ///< FileDescriptorSet files (protoc --descriptor_set_out)
  std::vector<std::string> files;           ///< .proto files compiled at start, found under import_paths
  std::vector<std::string> import_paths;    ///< empty: the working directory
  reflection_limits reflection;
};

} // namespace gather
