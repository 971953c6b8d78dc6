// A parsed message as JSON, read through protobuf's reflection (docs/grpc.md, "Messages and
// JSON"): the same JSON values protobuf's own printer gives with the gateway's print choices
// (names as the .proto writes them, every field printed with its default, enums by name), without
// its TypeResolver pipeline, which re-parsed the bytes, built a tree of defaults and printed text
// that was then parsed again (bench/callgrind_table.sh: 64% of the book page's instructions).
// What this writer does not know (google.protobuf.Any, FieldMask, a Value with no kind, a time
// out of RFC 3339's range) answers nullopt, and the caller takes protobuf's printer instead: the
// two agree on everything else (tests/downstream/grpc/grpc_json_test.cpp compares them).
#include "gather/downstream/grpc/grpc_message_json.hpp"

#include "gather/values/json_plain.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <ctime>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

namespace gather::grpc {

namespace pb = google::protobuf;
using nlohmann::json;
using field_type = pb::FieldDescriptor::CppType;

namespace {

/// A float as protobuf prints it (the shortest of 6 or 9 digits that reads back as the same
/// float), read back as the double a JSON parser makes of that text.
json float_json(float value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "Infinity" : "-Infinity";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", static_cast<double>(value));
  errno = 0; // a subnormal reads back with ERANGE, which protobuf takes as "not the same"
  const float back = std::strtof(text, nullptr);
  if (back != value || errno == ERANGE)
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  return std::strtod(text, nullptr);
}

json double_json(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

std::string base64(const std::string& bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[v >> 18];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0);
    out += alphabet[v >> 18];
    out += alphabet[(v >> 12) & 63];
    out += two ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

/// Nanoseconds as protobuf writes them after a second: none, or 3, 6 or 9 digits.
std::string nanos_text(std::int32_t nanos) {
  if (nanos == 0)
    return "";
  char text[16];
  if (nanos % 1000000 == 0)
    std::snprintf(text, sizeof text, ".%03d", nanos / 1000000);
  else if (nanos % 1000 == 0)
    std::snprintf(text, sizeof text, ".%06d", nanos / 1000);
  else
    std::snprintf(text, sizeof text, ".%09d", nanos);
  return text;
}

class writer {
public:
  std::optional<json> message(const pb::Message& msg) {
    const auto* type = msg.GetDescriptor();
    if (type->file()->name().rfind("google/protobuf/", 0) == 0)
      return well_known(msg, *type);
    json out = json::object();
    const auto* reflection = msg.GetReflection();
    for (int i = 0; i < type->field_count(); ++i) {
      const auto* field = type->field(i);
      if (field->is_repeated()) {
        auto value = field->is_map() ? map(msg, *field) : list(msg, *field);
        if (!value)
          return std::nullopt;
        out[field->name()] = std::move(*value);
        continue;
      }
      // A message field, a oneof's member and a proto3 `optional` print only when set.
      if ((field->cpp_type() == field_type::CPPTYPE_MESSAGE || field->has_presence()) &&
          !reflection->HasField(msg, field))
        continue;
      auto value = singular(msg, *field);
      if (!value)
        return std::nullopt;
      out[field->name()] = std::move(*value);
    }
    return out;
  }

private:
  std::optional<json> singular(const pb::Message& msg, const pb::FieldDescriptor& field) {
    const auto* r = msg.GetReflection();
    switch (field.cpp_type()) {
      case field_type::CPPTYPE_INT32: return json(r->GetInt32(msg, &field));
      case field_type::CPPTYPE_UINT32: return json(r->GetUInt32(msg, &field));
      case field_type::CPPTYPE_INT64: return json(std::to_string(r->GetInt64(msg, &field)));
      case field_type::CPPTYPE_UINT64: return json(std::to_string(r->GetUInt64(msg, &field)));
      case field_type::CPPTYPE_FLOAT: return float_json(r->GetFloat(msg, &field));
      case field_type::CPPTYPE_DOUBLE: return double_json(r->GetDouble(msg, &field));
      case field_type::CPPTYPE_BOOL: return json(r->GetBool(msg, &field));
      case field_type::CPPTYPE_ENUM: return enum_json(field, r->GetEnumValue(msg, &field));
      case field_type::CPPTYPE_STRING: {
        std::string scratch;
        const auto& text = r->GetStringReference(msg, &field, &scratch);
        if (field.type() == pb::FieldDescriptor::TYPE_BYTES)
          return json(base64(text));
        return json(text);
      }
      case field_type::CPPTYPE_MESSAGE: return message(r->GetMessage(msg, &field));
    }
    return std::nullopt;
  }

  std::optional<json> element(const pb::Message& msg, const pb::FieldDescriptor& field, int i) {
    const auto* r = msg.GetReflection();
    switch (field.cpp_type()) {
      case field_type::CPPTYPE_INT32: return json(r->GetRepeatedInt32(msg, &field, i));
      case field_type::CPPTYPE_UINT32: return json(r->GetRepeatedUInt32(msg, &field, i));
      case field_type::CPPTYPE_INT64: return json(std::to_string(r->GetRepeatedInt64(msg, &field, i)));
      case field_type::CPPTYPE_UINT64: return json(std::to_string(r->GetRepeatedUInt64(msg, &field, i)));
      case field_type::CPPTYPE_FLOAT: return float_json(r->GetRepeatedFloat(msg, &field, i));
      case field_type::CPPTYPE_DOUBLE: return double_json(r->GetRepeatedDouble(msg, &field, i));
      case field_type::CPPTYPE_BOOL: return json(r->GetRepeatedBool(msg, &field, i));
      case field_type::CPPTYPE_ENUM: return enum_json(field, r->GetRepeatedEnumValue(msg, &field, i));
      case field_type::CPPTYPE_STRING: {
        std::string scratch;
        const auto& text = r->GetRepeatedStringReference(msg, &field, i, &scratch);
        if (field.type() == pb::FieldDescriptor::TYPE_BYTES)
          return json(base64(text));
        return json(text);
      }
      case field_type::CPPTYPE_MESSAGE: return message(r->GetRepeatedMessage(msg, &field, i));
    }
    return std::nullopt;
  }

  std::optional<json> list(const pb::Message& msg, const pb::FieldDescriptor& field) {
    json out = json::array();
    const int size = msg.GetReflection()->FieldSize(msg, &field);
    for (int i = 0; i < size; ++i) {
      auto value = element(msg, field, i);
      if (!value)
        return std::nullopt;
      out.push_back(std::move(*value));
    }
    return out;
  }

  /// A map is a repeated entry message (key = 1, value = 2); its keys are JSON's member names.
  /// A later entry of a key replaces an earlier one, as protobuf's parser has it.
  std::optional<json> map(const pb::Message& msg, const pb::FieldDescriptor& field) {
    json out = json::object();
    const auto* r = msg.GetReflection();
    const int size = r->FieldSize(msg, &field);
    for (int i = 0; i < size; ++i) {
      const auto& entry = r->GetRepeatedMessage(msg, &field, i);
      const auto* key_field = entry.GetDescriptor()->map_key();
      const auto* value_field = entry.GetDescriptor()->map_value();
      auto key = singular(entry, *key_field);
      auto value = singular(entry, *value_field); // an unset message value prints as its defaults
      if (!key || !value)
        return std::nullopt;
      out[key->is_string() ? key->get<std::string>() : key->dump()] = std::move(*value);
    }
    return out;
  }

  static json enum_json(const pb::FieldDescriptor& field, int number) {
    if (field.enum_type()->full_name() == "google.protobuf.NullValue")
      return nullptr;
    if (const auto* value = field.enum_type()->FindValueByNumber(number))
      return value->name();
    return number;
  }

  std::optional<json> well_known(const pb::Message& msg, const pb::Descriptor& type) {
    const auto& name = type.full_name();
    const auto* r = msg.GetReflection();
    const auto field = [&](const char* n) { return type.FindFieldByName(n); };
    if (name == "google.protobuf.Timestamp") {
      const auto seconds = r->GetInt64(msg, field("seconds"));
      const auto nanos = r->GetInt32(msg, field("nanos"));
      // 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z, as RFC 3339 allows.
      if (seconds < -62135596800LL || seconds > 253402300799LL || nanos < 0 || nanos > 999999999)
        return std::nullopt;
      const std::time_t t = static_cast<std::time_t>(seconds);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char text[40];
      std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
      return json(std::string(text) + nanos_text(nanos) + "Z");
    }
    if (name == "google.protobuf.Duration") {
      const auto seconds = r->GetInt64(msg, field("seconds"));
      const auto nanos = r->GetInt32(msg, field("nanos"));
      if (seconds < -315576000000LL || seconds > 315576000000LL || nanos < -999999999 || nanos > 999999999 ||
          (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0))
        return std::nullopt;
      const bool negative = seconds < 0 || nanos < 0;
      return json(std::string(negative ? "-" : "") + std::to_string(std::llabs(seconds)) +
                  nanos_text(std::abs(nanos)) + "s");
    }
    if (name == "google.protobuf.Empty")
      return json::object();
    if (name == "google.protobuf.Struct")
      return map(msg, *field("fields"));
    if (name == "google.protobuf.ListValue")
      return list(msg, *field("values"));
    if (name == "google.protobuf.Value") {
      const auto* kind = r->GetOneofFieldDescriptor(msg, type.FindOneofByName("kind"));
      if (!kind)
        return std::nullopt; // no kind: protobuf's printer says what it makes of it
      if (kind->name() == "number_value") {
        const double number = r->GetDouble(msg, kind);
        if (!std::isfinite(number))
          return std::nullopt;
        return json(number);
      }
      return singular(msg, *kind);
    }
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "Value") == 0 && type.field_count() == 1 &&
        type.field(0)->name() == "value")
      return singular(msg, *type.field(0)); // the wrappers: Int32Value, StringValue, ...
    return std::nullopt; // Any, FieldMask, and what else google/protobuf/ holds
  }
};

} // namespace

std::optional<nlohmann::json> message_json(const pb::Message& message) {
  return writer{}.message(message);
}

namespace {

/// A string nlohmann writes as it is (printable ASCII but `"` and `\\`: it escapes nothing else)
/// copied; any other by nlohmann.
void put_string(std::string& out, const std::string& text) {
  const std::size_t at = out.size();
  out.resize(at + text.size() + 2);
  out[at] = '"';
  if (copy_plain_json(out.data() + at + 1, text) != text.size()) {
    out.resize(at);
    out += json(text).dump();
    return;
  }
  out.back() = '"';
}

void put_text(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first)
          out += ',';
        first = false;
        put_string(out, it.key());
        out += ':';
        put_text(out, it.value());
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& member : value) {
        if (!first)
          out += ',';
        first = false;
        put_text(out, member);
      }
      out += ']';
      return;
    }
    case json::value_t::string: return put_string(out, value.get_ref<const std::string&>());
    case json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out += "null"; return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char digits[24];
      const auto end = value.is_number_unsigned() ? std::to_chars(digits, digits + sizeof digits, value.get<std::uint64_t>()).ptr
                                                  : std::to_chars(digits, digits + sizeof digits, value.get<std::int64_t>()).ptr;
      out.append(digits, end);
      return;
    }
    default: out += value.dump(); return; // a float, binary, discarded: nlohmann's own text
  }
}

} // namespace

std::string json_text(const json& value) {
  std::string out;
  out.reserve(256);
  put_text(out, value);
  return out;
}

} // namespace gather::grpc
