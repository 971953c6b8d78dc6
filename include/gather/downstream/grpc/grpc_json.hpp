// A gRPC call's message and answer in JSON (docs/grpc.md): the request message
// rendered from the section's template, JSON to protobuf bytes and back, with the three fixed
// print choices (field names as in the .proto, default values printed, enums by name).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

namespace google::protobuf {
class Descriptor;
class DynamicMessageFactory;
namespace util {
class TypeResolver;
}
} // namespace google::protobuf

namespace gather::grpc {

class field_orders;

/// The raw value of a placeholder: text for what the inbound request gives (a capture, a query
/// parameter, a header), a JSON scalar for a section's field, a batch item or a claim; nullopt
/// when the message cannot be made (a section's field that is absent or not a scalar).
/// A discarded value: absent, the member is left out (render_json_template, url_template.hpp).
using value_resolver = std::function<std::optional<nlohmann::json>(const url_part&)>;

/// `call.message` with every placeholder filled in. A string that is one whole placeholder takes
/// the value itself, as text where `as_text` says its field is a string; any other string takes
/// each value as text (no encoding: the message is not a URL). nullopt when a value is missing.
std::optional<nlohmann::json> render_message(const grpc_call_config& call,
                                             const std::vector<bool>& as_text,
                                             const value_resolver& resolve);

struct conversion {
  bool ok = false;
  std::string text;  ///< the message's bytes (encode) or its JSON (decode)
  std::string error; ///< why not, for the log
};

/// What converting messages of one descriptor pool needs (thread-safe, both).
struct message_types {
  google::protobuf::util::TypeResolver& resolver;
  google::protobuf::DynamicMessageFactory& factory;
  /// The pool's types' field orders (proto_catalog::orders); without, each answer makes its own.
  const field_orders* orders = nullptr;
};

/// `message` (proto3 JSON) as the bytes of a `type` message; a key the type lacks or a value its
/// field cannot hold is an error. Set through reflection (encode_message_direct), else by
/// protobuf's JSON parser (encode_message_protobuf), which also says every refusal.
conversion encode_message(const message_types& types, const google::protobuf::Descriptor& type,
                          const nlohmann::json& message);
/// The reflection way alone (grpc_message_encode.cpp): true with `bytes` set when it takes the
/// message; false for what it leaves to protobuf's parser (the well-known types, a spelling or a
/// value it is not sure protobuf takes the same way, anything protobuf may refuse).
bool encode_message_direct(const message_types& types, const google::protobuf::Descriptor& type,
                           const nlohmann::json& message, std::string& bytes);
/// protobuf's JSON parser alone (JsonToBinaryString on the value's text): what encode_message did
/// before the reflection way, kept for what that leaves and to check the two agree.
conversion encode_message_protobuf(const message_types& types, const google::protobuf::Descriptor& type,
                                   const nlohmann::json& message);

/// The bytes of a `type` message as JSON: names as the .proto writes them, every field printed
/// with its default, enums by name (int64 as strings, bytes as base64, as the mapping says).
/// Bytes that are not such a message (malformed wire format, a field cut short) are an error.
conversion decode_message(const message_types& types, const google::protobuf::Descriptor& type,
                          std::string_view bytes);

struct decoded {
  bool ok = false;
  nlohmann::json value; ///< the message as JSON, when ok
  std::string error;    ///< why not, for the log
};
/// decode_message's JSON as a value (no text to parse again): the message parsed, then written
/// through reflection, or by protobuf's printer for the few types the writer leaves to it.
decoded decode_message_value(const message_types& types, const google::protobuf::Descriptor& type,
                             std::string_view bytes);
/// decode_message_value's JSON as json_text writes it, appended to `out`: written from the parsed
/// message in one walk (message_text), no value in between; by the value's way for what that walk
/// leaves to protobuf's printer. False with `error` (and `out` as it was) as decode_message_value.
bool decode_message_text(const message_types& types, const google::protobuf::Descriptor& type,
                         std::string_view bytes, std::string& out, std::string& error);
/// protobuf's printer alone (BinaryToJsonString with the same choices): what decode_message
/// gave before its writer, kept for what the writer leaves to it and to check the two agree.
conversion decode_message_printed(const message_types& types, const google::protobuf::Descriptor& type,
                                  std::string_view bytes);

} // namespace gather::grpc
