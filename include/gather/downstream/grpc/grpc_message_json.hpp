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

/// `value.dump()`'s text, byte for byte, written in one string: strings and keys of printable
/// ASCII copied as they are, integers by std::to_chars, and what else there is (a string to
/// escape or of UTF-8 beyond ASCII, a float, binary) by nlohmann's own serializer, so its choices
/// (and its error on ill-formed UTF-8) stay. A section's data is written once per answer; nlohmann's
/// escaping decodes every byte as UTF-8 (bench/callgrind.sh's book page: ~37k instructions a page).
std::string json_text(const nlohmann::json& value);

} // namespace gather::grpc
