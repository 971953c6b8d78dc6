// A gRPC call's plan over its method: the kind of method it may be, the message's keys and
// literal values checked against the input type, and which placeholders fill string fields.

#include "gather/downstream/grpc/proto_catalog.hpp"

#include <set>

#include <google/protobuf/util/json_util.h>

namespace gather {

namespace pb = google::protobuf;

namespace {

/// The well-known types whose JSON is not an object of their fields (proto3 JSON mapping): a
/// message key is never looked up inside them, their value is checked whole.
bool special_json(const pb::Descriptor& type) {
  static const std::set<std::string> names = {
      "google.protobuf.Any",        "google.protobuf.Timestamp",   "google.protobuf.Duration",
      "google.protobuf.FieldMask",  "google.protobuf.Struct",      "google.protobuf.Value",
      "google.protobuf.ListValue",  "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
      "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.Int32Value",
      "google.protobuf.UInt32Value", "google.protobuf.BoolValue",  "google.protobuf.StringValue",
      "google.protobuf.BytesValue"};
  return names.count(type.full_name()) > 0;
}

/// A field by its .proto name or its JSON name, as the proto3 JSON parser accepts either.
const pb::FieldDescriptor* field_named(const pb::Descriptor& type, const std::string& key) {
  if (const auto* field = type.FindFieldByName(key))
    return field;
  for (int i = 0; i < type.field_count(); ++i)
    if (type.field(i)->json_name() == key)
      return type.field(i);
  return nullptr;
}

bool has_braces(const nlohmann::json& value) {
  if (value.is_string())
    return value.get_ref<const std::string&>().find_first_of("{}") != std::string::npos;
  if (value.is_structured())
    for (const auto& member : value)
      if (has_braces(member))
        return true;
  return false;
}

class message_checker {
public:
  /// `templates`: the message is a template, whose strings with braces are left for run time.
  message_checker(const pb::DescriptorPool& pool, std::vector<std::string>& problems,
                  bool templates = true)
      : factory_(&pool), problems_(problems), templates_(templates) {}

  void check_object(const nlohmann::json& value, const pb::Descriptor& type, const std::string& path) {
    if (value.is_null())
      return;
    if (!value.is_object()) {
      problems_.push_back(path + ": must be an object (" + type.full_name() + ")");
      return;
    }
    for (const auto& [key, member] : value.items()) {
      const auto* field = field_named(type, key);
      if (!field) {
        problems_.push_back(path + "." + key + ": " + type.full_name() + " has no field \"" + key + "\"");
        continue;
      }
      check_member(key, member, *field, type, path + "." + key);
    }
  }

private:
  void check_member(const std::string& key, const nlohmann::json& value, const pb::FieldDescriptor& field,
                    const pb::Descriptor& parent, const std::string& path) {
    const auto* type = field.message_type();
    if (type && !field.is_map() && !special_json(*type)) {
      if (!field.is_repeated())
        return check_object(value, *type, path);
      if (!value.is_array() && !value.is_null()) {
        problems_.push_back(path + ": must be an array (repeated " + type->full_name() + ")");
        return;
      }
      for (std::size_t i = 0; value.is_array() && i < value.size(); ++i)
        check_object(value[i], *type, path + "[" + std::to_string(i) + "]");
      return;
    }
    if (templates_ && has_braces(value))
      return; // a placeholder's value is known only when a request renders it
    probe(key, value, parent, path);
  }

  /// Parses `{"key": value}` as `parent`: the field takes the value, or the parser says why not.
  void probe(const std::string& key, const nlohmann::json& value, const pb::Descriptor& parent,
             const std::string& path) {
    const pb::Message* prototype = factory_.GetPrototype(&parent);
    if (!prototype)
      return;
    std::unique_ptr<pb::Message> message(prototype->New());
    const std::string text = nlohmann::json{{key, value}}.dump();
    const auto status = pb::util::JsonStringToMessage(text, message.get(), pb::util::JsonParseOptions{});
    if (!status.ok())
      problems_.push_back(path + ": " + std::string(status.message()));
  }

  pb::DynamicMessageFactory factory_;
  std::vector<std::string>& problems_;
  bool templates_ = true;
};

std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> tokens;
  std::size_t at = 1;
  while (at <= pointer.size() && !pointer.empty()) {
    const auto end = std::min(pointer.find('/', at), pointer.size());
    std::string token = pointer.substr(at, end - at);
    for (std::size_t i = 0; i + 1 < token.size(); ++i)
      if (token[i] == '~')
        token.replace(i, 2, token[i + 1] == '1' ? "/" : "~");
    tokens.push_back(std::move(token));
    at = end + 1;
  }
  return tokens;
}

/// Whether the string at `pointer` fills a string field (or a google.protobuf.StringValue).
bool fills_text(const pb::Descriptor& input, const std::string& pointer) {
  const auto tokens = pointer_tokens(pointer);
  const pb::Descriptor* type = &input;
  const pb::FieldDescriptor* field = nullptr;
  for (std::size_t i = 0; i < tokens.size();) {
    if (!type || special_json(*type))
      return false;
    field = field_named(*type, tokens[i++]);
    if (!field)
      return false;
    if (field->is_map()) {
      if (i < tokens.size())
        ++i; // the map's key
      field = field->message_type()->map_value();
    } else if (field->is_repeated() && i < tokens.size()) {
      ++i; // the element's index
    }
    type = field->message_type();
    if (i < tokens.size() && (!type || special_json(*type)))
      return false;
  }
  if (!field)
    return false;
  return field->type() == pb::FieldDescriptor::TYPE_STRING ||
         (type && type->full_name() == "google.protobuf.StringValue");
}

} // namespace

plan_result plan_grpc_call(const grpc_call_config& call, const pb::MethodDescriptor& method,
                           const std::string& path) {
  plan_result result;
  auto& problems = result.problems;
  if (method.client_streaming()) {
    problems.push_back(path + ".method: " + method.full_name() +
                       (method.server_streaming() ? " is bidirectional streaming"
                                                  : " is client streaming") +
                       ": only unary and server-streaming methods can be called");
    return result;
  }
  if (method.server_streaming() && call.max_messages == 0)
    problems.push_back(path + ": needs \"max_messages\" (1 to 10000): " + method.full_name() +
                       " is server streaming");
  if (!method.server_streaming() && call.max_messages != 0)
    problems.push_back(path + ".max_messages: only for a server-streaming method (" +
                       method.full_name() + " is unary)");
  if (!call.message.is_string()) // else "{body}": the whole body, known only at run time
    message_checker(*method.file()->pool(), problems)
        .check_object(call.message, *method.input_type(), path + ".message");
  if (!problems.empty())
    return result;
  grpc_method_plan plan;
  plan.method = &method;
  for (const auto& placeholder : call.placeholders)
    plan.as_text.push_back(fills_text(*method.input_type(), placeholder.pointer));
  plan.input_url = "type.googleapis.com/" + method.input_type()->full_name();
  plan.output_url = "type.googleapis.com/" + method.output_type()->full_name();
  result.plan = std::move(plan);
  return result;
}

std::vector<std::string> message_problems(const nlohmann::json& message, const pb::Descriptor& type,
                                          const std::string& path) {
  std::vector<std::string> problems;
  message_checker(*type.file()->pool(), problems, false).check_object(message, type, path);
  return problems;
}

} // namespace gather
