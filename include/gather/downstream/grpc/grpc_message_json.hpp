// A parsed message as JSON through protobuf's reflection (grpc_message_json.cpp): the fast way
// of decode_message (grpc_json.hpp), which falls back to protobuf's printer when this says nullopt.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace google::protobuf {
class Message;
}

namespace gather::grpc {

/// `message` as the JSON protobuf's printer gives with the gateway's choices (names as the
/// .proto writes them, every field with its default, enums by name, int64 as strings, bytes as
/// base64); nullopt for what it does not write (Any, FieldMask, a Value with no kind, a time out
/// of range): the caller asks protobuf's printer then.
std::optional<nlohmann::json> message_json(const google::protobuf::Message& message);

} // namespace gather::grpc
