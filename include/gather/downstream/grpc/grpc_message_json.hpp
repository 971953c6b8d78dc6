// A parsed message as JSON through protobuf's reflection (grpc_message_json.cpp): the fast way
// of decode_message (grpc_json.hpp), which falls back to protobuf's printer when this says nullopt.
#pragma once

#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
class Message;
} // namespace google::protobuf

namespace gather::grpc {

/// Each message type's fields in the order nlohmann's object keeps its keys (by name, a
/// std::map's order), each with its member's text `"name":`, and whether the type is one of
/// google/protobuf/'s (written by its mapping, not field by field). Made once per type on first
/// use and kept while the owner lives (a catalog holds one for its pool's types); thread-safe.
class field_orders {
public:
  struct field_key {
    const google::protobuf::FieldDescriptor* field = nullptr;
    std::string quoted; ///< `"name":`: field names are identifiers, JSON writes them as they are
  };
  struct type_order {
    bool well_known = false;
    std::vector<field_key> fields;
    /// A JSON member's field, as protobuf's JSON parser finds it: by its JSON name (lowerCamel
    /// or the .proto's json_name), else by its .proto name; null when neither.
    const google::protobuf::FieldDescriptor* find(const std::string& key) const {
      const auto it = by_key.find(key);
      return it == by_key.end() ? nullptr : it->second;
    }
    std::unordered_map<std::string, const google::protobuf::FieldDescriptor*> by_key;
  };
  const type_order& of(const google::protobuf::Descriptor& type) const;

private:
  mutable std::shared_mutex mutex_;
  mutable std::unordered_map<const google::protobuf::Descriptor*, std::unique_ptr<type_order>> types_;
};

/// `message` as the JSON protobuf's printer gives with the gateway's choices (names as the
/// .proto writes them, every field with its default, enums by name, int64 as strings, bytes as
/// base64); nullopt for what it does not write (Any, FieldMask, a Value with no kind, a time out
/// of range): the caller asks protobuf's printer then. `orders`: the types' orders to use (one
/// made for this call without).
std::optional<nlohmann::json> message_json(const google::protobuf::Message& message,
                                           const field_orders* orders = nullptr);

/// json_text(*message_json(message)) appended to `out`, written in the same walk without the
/// value in between; false (and `out` as it was) where message_json says nullopt. Throws what
/// json_text throws (a string of ill-formed UTF-8, which a proto3 parse never lets by).
bool message_text(const google::protobuf::Message& message, std::string& out,
                  const field_orders* orders = nullptr);

/// `value.dump()`'s text, byte for byte, written in one string: strings and keys of printable
/// ASCII copied as they are, integers by std::to_chars, and what else there is (a string to
/// escape or of UTF-8 beyond ASCII, a float, binary) by nlohmann's own serializer, so its choices
/// (and its error on ill-formed UTF-8) stay. A section's data is written once per answer; nlohmann's
/// escaping decodes every byte as UTF-8 (bench/callgrind.sh's book page: ~37k instructions a page).
std::string json_text(const nlohmann::json& value);

} // namespace gather::grpc
