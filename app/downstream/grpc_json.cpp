#include "gather/downstream/grpc_json.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver.h>

#include "gather/config/url_template.hpp"

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

conversion decode_message(const message_types& types, const pb::Descriptor& type,
                          std::string_view bytes) {
  conversion out;
  // The JSON printer skips what it cannot read: the message is parsed first, so bytes that are not
  // one of this type are an error rather than a half-empty object.
  const pb::Message* prototype = types.factory.GetPrototype(&type);
  std::unique_ptr<pb::Message> parsed(prototype ? prototype->New() : nullptr);
  if (!parsed || !parsed->ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    out.error = "not a " + type.full_name() + " message";
    return out;
  }
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

} // namespace gather::grpc
