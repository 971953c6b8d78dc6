#include "gather/downstream/grpc/grpc_json.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver.h>

#include "gather/config/url_template.hpp"
#include "gather/downstream/grpc/grpc_message_json.hpp"

namespace gather::grpc {

namespace pb = google::protobuf;

std::optional<nlohmann::json> render_message(const grpc_call_config& call,
                                             const std::vector<bool>& as_text,
                                             const value_resolver& resolve) {
  return render_json_template(call.message, call.placeholders, as_text, resolve);
}

namespace {

std::string type_url(const pb::Descriptor& type) {
  return "type.googleapis.com/" + type.full_name();
}

} // namespace

conversion encode_message(const message_types& types, const pb::Descriptor& type,
                          const nlohmann::json& message) {
  conversion out;
  if (encode_message_direct(types, type, message, out.text)) {
    out.ok = true;
    return out;
  }
  return encode_message_protobuf(types, type, message);
}

conversion encode_message_protobuf(const message_types& types, const pb::Descriptor& type,
                                   const nlohmann::json& message) {
  conversion out;
  const auto status = pb::util::JsonToBinaryString(
      &types.resolver, type_url(type), message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      &out.text, pb::util::JsonParseOptions{});
  out.ok = status.ok();
  if (!out.ok) {
    out.text.clear();
    out.error = std::string(status.message());
  }
  return out;
}

namespace {

/// protobuf's own printer, on the bytes again: what message_json does not write.
conversion printed(const message_types& types, const pb::Descriptor& type, std::string_view bytes) {
  conversion out;
  pb::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  const auto status =
      pb::util::BinaryToJsonString(&types.resolver, type_url(type), std::string(bytes), &out.text, options);
  out.ok = status.ok();
  if (!out.ok) {
    out.text.clear();
    out.error = std::string(status.message());
  }
  return out;
}

} // namespace

namespace {

/// The bytes parsed first, so bytes that are not one of this type are an error rather than a
/// half-empty object (protobuf's printer skips what it cannot read).
std::unique_ptr<pb::Message> parsed_message(const message_types& types, const pb::Descriptor& type,
                                            std::string_view bytes, std::string& error) {
  const pb::Message* prototype = types.factory.GetPrototype(&type);
  std::unique_ptr<pb::Message> parsed(prototype ? prototype->New() : nullptr);
  if (!parsed || !parsed->ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error = "not a " + type.full_name() + " message";
    return nullptr;
  }
  return parsed;
}

/// What message_json leaves: protobuf's printer's text, read as a value.
decoded printed_value(const message_types& types, const pb::Descriptor& type, std::string_view bytes) {
  decoded out;
  auto text = printed(types, type, bytes);
  if (!text.ok) {
    out.error = std::move(text.error);
    return out;
  }
  out.value = nlohmann::json::parse(text.text, nullptr, false);
  out.ok = !out.value.is_discarded();
  if (!out.ok)
    out.error = "protobuf's printer wrote no JSON";
  return out;
}

} // namespace

decoded decode_message_value(const message_types& types, const pb::Descriptor& type, std::string_view bytes) {
  decoded out;
  const auto parsed = parsed_message(types, type, bytes, out.error);
  if (!parsed)
    return out;
  if (auto value = message_json(*parsed, types.orders)) {
    out.value = std::move(*value);
    out.ok = true;
    return out;
  }
  return printed_value(types, type, bytes);
}

bool decode_message_text(const message_types& types, const pb::Descriptor& type, std::string_view bytes,
                         std::string& out, std::string& error) {
  const auto parsed = parsed_message(types, type, bytes, error);
  if (!parsed)
    return false;
  const std::size_t at = out.size();
  try {
    if (message_text(*parsed, out, types.orders))
      return true;
  } catch (const nlohmann::json::exception&) {
    // A string of ill-formed UTF-8 (proto2's strings are not checked by the parse): the value's
    // way then, which throws the same unless the message is one left to protobuf's printer.
    out.resize(at);
    auto value = decode_message_value(types, type, bytes);
    if (value.ok)
      out += json_text(value.value);
    error = std::move(value.error);
    return value.ok;
  }
  auto value = printed_value(types, type, bytes);
  if (!value.ok) {
    error = std::move(value.error);
    return false;
  }
  out += json_text(value.value);
  return true;
}

conversion decode_message(const message_types& types, const pb::Descriptor& type, std::string_view bytes) {
  auto value = decode_message_value(types, type, bytes);
  conversion out;
  out.ok = value.ok;
  out.error = std::move(value.error);
  if (value.ok)
    out.text = value.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

conversion decode_message_printed(const message_types& types, const pb::Descriptor& type,
                                  std::string_view bytes) {
  return printed(types, type, bytes);
}

} // namespace gather::grpc
