// The message types of the gRPC sections (docs/grpc.md): the descriptors that
// `protos` names, compiled once per configuration, and each gRPC section's plan over them.
//
// A catalog is a configuration value: build_proto_catalog makes it from a config (reading the
// descriptor sets, compiling the .proto files) and the config holds it, so a reload builds new
// descriptors and a request in flight keeps the ones it began with. Once built it is only read
// (the pool has no fallback database; a DynamicMessageFactory's GetPrototype and the type
// resolver are thread-safe), from any loop.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/type_resolver.h>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/grpc_message_json.hpp"

namespace gather {

/// How one gRPC section's message is made and its answer read, for a method that resolved.
struct grpc_method_plan {
  const google::protobuf::MethodDescriptor* method = nullptr;
  /// Per message placeholder (grpc_call_config::placeholders): its field takes text (a string
  /// field, or a well-known wrapper of one), so a whole placeholder's value goes in as a string.
  std::vector<bool> as_text;
  /// "type.googleapis.com/<full name>" of the input and output types, for the type resolver.
  std::string input_url;
  std::string output_url;
  bool server_streaming() const { return method->server_streaming(); }
};

struct proto_catalog {
  /// Every file of `protos`, built into a pool of its own.
  std::unique_ptr<google::protobuf::DescriptorPool> pool;
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver;
  /// Messages of the pool's types (GetPrototype is thread-safe): bytes are parsed before printing.
  std::unique_ptr<google::protobuf::DynamicMessageFactory> factory;
  /// The pool's types' field orders, made as answers first need them (thread-safe).
  std::unique_ptr<grpc::field_orders> orders;
  /// [route][section]: the plan of each gRPC section whose method the pool has; nullopt for a
  /// section that is not gRPC, or whose method only its target's reflection can tell.
  std::vector<std::vector<std::optional<grpc_method_plan>>> sections;
  /// [route]: the plan of a batch route's gRPC call, as for sections.
  std::vector<std::optional<grpc_method_plan>> batches;
  /// Every file of the pool: a catalog built again with what reflection gave starts from these,
  /// never from the disk (the files are read at start and on reload only).
  std::vector<google::protobuf::FileDescriptorProto> files;

  proto_catalog();
  ~proto_catalog();
  proto_catalog(const proto_catalog&) = delete;
  proto_catalog& operator=(const proto_catalog&) = delete;
};

struct proto_catalog_result {
  std::shared_ptr<const proto_catalog> value; ///< set when `problems` is empty
  std::vector<std::string> problems;          ///< "<json path>: <what is wrong>", as load_config's
};

/// Reads `cfg.protos` and checks every gRPC section and batch against it (the method exists and
/// is unary or server streaming, max_messages fits its kind, the message's keys are fields of
/// the input type and its literal values fit them). A method that `protos` lacks is no problem
/// for a target with `"reflection": true`. Never connects anywhere.
///
/// `reflected`: files the targets' server reflection gave (grpc_reflection.hpp), added after
/// `protos`' own, taken from `cfg.descriptors` as built then (a name already given is taken from
/// there). With them, a plan that cannot be
/// made (a reflected method whose input type lacks a `message` key) is a problem that leaves the
/// section without a plan rather than the catalog unbuilt: `value` is set unless a file fails.
proto_catalog_result build_proto_catalog(
    const config& cfg, const std::vector<google::protobuf::FileDescriptorProto>* reflected = nullptr);

/// Whether `cfg` has a gRPC section or batch.
bool has_grpc_calls(const config& cfg);

/// Builds `cfg.descriptors` when `cfg` has gRPC calls or `protos` and none is built yet; the
/// problems when it cannot (then `cfg.descriptors` stays as it was).
std::vector<std::string> attach_proto_catalog(config& cfg);

/// The plan of `call` over `method`'s input type, or the problems of its message, each "<path
/// below `path`>: <what is wrong>" (`path` is the `grpc` object's JSON path). Used at check time
/// and for methods that reflection finds later.
struct plan_result {
  std::optional<grpc_method_plan> plan;
  std::vector<std::string> problems;
};
plan_result plan_grpc_call(const grpc_call_config& call,
                           const google::protobuf::MethodDescriptor& method,
                           const std::string& path);

/// Why a rendered message (no templates left in it) does not fit `type`: "<path>.<field>: <what
/// is wrong>" each, `path` its root; empty when every member fits. What names the field when a
/// write's body cannot be turned into its message (docs/api.md#write-routes).
std::vector<std::string> message_problems(const nlohmann::json& message,
                                          const google::protobuf::Descriptor& type,
                                          const std::string& path);

} // namespace gather
