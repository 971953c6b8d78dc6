// One walk over a parsed message's reflection, with the JSON it makes handed to a sink (docs/
// grpc.md): a sink that builds an nlohmann value (message_json, for a `fields` projection) or one
// that writes the text json_text would write of that value (message_text, a section's data as it
// goes out). Both take the fields of a type in name order, as nlohmann's object (a std::map) keeps
// its keys, and a map's entries sorted by their JSON key, a later entry of a key winning; so the
// text is byte for byte json_text(message_json(m)) without the value in between.
//
// A sink has begin_object/end_object, field(field_orders::field_key) and key(std::string) before
// a member, begin_array/end_array and element() before each element, and the scalars integer,
// unsigned_integer, quoted (an int64 kind as a string), string, number, boolean and null.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include "gather/downstream/grpc/grpc_message_json.hpp"

namespace gather::grpc::walk {

namespace pb = google::protobuf;
using field_type = pb::FieldDescriptor::CppType;

/// A finite float as the double a JSON parser reads from protobuf's text of it (the shortest of 6
/// or 9 digits that reads back as the same float).
double float_value(float value);
std::string base64(const std::string& bytes);
/// RFC 3339 text of a Timestamp, a Duration's "1.5s"; nullopt out of the range protobuf prints.
std::optional<std::string> timestamp_text(std::int64_t seconds, std::int32_t nanos);
std::optional<std::string> duration_text(std::int64_t seconds, std::int32_t nanos);
/// A map entry's key as JSON's member name: the number's digits, "true"/"false", the string.
std::string map_key(const pb::Message& entry, const pb::FieldDescriptor& key_field);

template <class Sink> class walker {
public:
  walker(Sink& sink, const field_orders& orders) : sink_(sink), orders_(orders) {}

  /// False for what the walk does not write (Any, FieldMask, a Value with no kind, a time out of
  /// range): what the sink holds then is to be thrown away.
  bool message(const pb::Message& msg) {
    const auto* type = msg.GetDescriptor();
    const auto& order = orders_.of(*type);
    if (order.well_known)
      return well_known(msg, *type);
    const auto* r = msg.GetReflection();
    sink_.begin_object();
    for (const auto& key : order.fields) {
      const auto* field = key.field;
      if (field->is_repeated()) {
        sink_.field(key);
        if (!(field->is_map() ? map(msg, *field) : list(msg, *field)))
          return false;
        continue;
      }
      // A message field, a oneof's member and a proto3 `optional` print only when set.
      if ((field->cpp_type() == field_type::CPPTYPE_MESSAGE || field->has_presence()) && !r->HasField(msg, field))
        continue;
      sink_.field(key);
      if (!value(msg, *field, -1))
        return false;
    }
    sink_.end_object();
    return true;
  }

private:
  /// The field's value (`i` < 0) or its element `i`.
  bool value(const pb::Message& msg, const pb::FieldDescriptor& field, int i) {
    const auto* r = msg.GetReflection();
    const bool one = i < 0;
    switch (field.cpp_type()) {
      case field_type::CPPTYPE_INT32:
        sink_.integer(one ? r->GetInt32(msg, &field) : r->GetRepeatedInt32(msg, &field, i));
        return true;
      case field_type::CPPTYPE_UINT32:
        sink_.unsigned_integer(one ? r->GetUInt32(msg, &field) : r->GetRepeatedUInt32(msg, &field, i));
        return true;
      case field_type::CPPTYPE_INT64:
        sink_.quoted(one ? r->GetInt64(msg, &field) : r->GetRepeatedInt64(msg, &field, i));
        return true;
      case field_type::CPPTYPE_UINT64:
        sink_.quoted(one ? r->GetUInt64(msg, &field) : r->GetRepeatedUInt64(msg, &field, i));
        return true;
      case field_type::CPPTYPE_FLOAT: {
        const float f = one ? r->GetFloat(msg, &field) : r->GetRepeatedFloat(msg, &field, i);
        return floating(std::isfinite(f) ? float_value(f) : static_cast<double>(f));
      }
      case field_type::CPPTYPE_DOUBLE:
        return floating(one ? r->GetDouble(msg, &field) : r->GetRepeatedDouble(msg, &field, i));
      case field_type::CPPTYPE_BOOL:
        sink_.boolean(one ? r->GetBool(msg, &field) : r->GetRepeatedBool(msg, &field, i));
        return true;
      case field_type::CPPTYPE_ENUM:
        enumerated(field, one ? r->GetEnumValue(msg, &field) : r->GetRepeatedEnumValue(msg, &field, i));
        return true;
      case field_type::CPPTYPE_STRING: {
        std::string scratch;
        const auto& text = one ? r->GetStringReference(msg, &field, &scratch)
                               : r->GetRepeatedStringReference(msg, &field, i, &scratch);
        if (field.type() == pb::FieldDescriptor::TYPE_BYTES)
          sink_.string(base64(text));
        else
          sink_.string(text);
        return true;
      }
      case field_type::CPPTYPE_MESSAGE:
        return message(one ? r->GetMessage(msg, &field) : r->GetRepeatedMessage(msg, &field, i));
    }
    return false;
  }

  /// NaN and the infinities as the mapping's strings.
  bool floating(double number) {
    static const std::string nan = "NaN", up = "Infinity", down = "-Infinity";
    if (std::isnan(number))
      sink_.string(nan);
    else if (std::isinf(number))
      sink_.string(number > 0 ? up : down);
    else
      sink_.number(number);
    return true;
  }

  void enumerated(const pb::FieldDescriptor& field, int number) {
    if (field.enum_type()->full_name() == "google.protobuf.NullValue")
      sink_.null();
    else if (const auto* named = field.enum_type()->FindValueByNumber(number))
      sink_.string(named->name());
    else
      sink_.integer(number);
  }

  bool list(const pb::Message& msg, const pb::FieldDescriptor& field) {
    sink_.begin_array();
    const int size = msg.GetReflection()->FieldSize(msg, &field);
    for (int i = 0; i < size; ++i) {
      sink_.element();
      if (!value(msg, field, i))
        return false;
    }
    sink_.end_array();
    return true;
  }

  /// A map is a repeated entry message (key = 1, value = 2) whose keys are JSON's member names,
  /// in their sorted order; a later entry of a key replaces an earlier one, as protobuf's parser
  /// has it. An entry with no value prints its value's default.
  bool map(const pb::Message& msg, const pb::FieldDescriptor& field) {
    const auto* r = msg.GetReflection();
    const int size = r->FieldSize(msg, &field);
    const auto& key_field = *field.message_type()->map_key();
    const auto& value_field = *field.message_type()->map_value();
    std::vector<std::pair<std::string, int>> keys;
    keys.reserve(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i)
      keys.emplace_back(map_key(r->GetRepeatedMessage(msg, &field, i), key_field), i);
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    sink_.begin_object();
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (k + 1 < keys.size() && keys[k + 1].first == keys[k].first)
        continue;
      sink_.key(keys[k].first);
      if (!value(r->GetRepeatedMessage(msg, &field, keys[k].second), value_field, -1))
        return false;
    }
    sink_.end_object();
    return true;
  }

  bool well_known(const pb::Message& msg, const pb::Descriptor& type) {
    const auto& name = type.full_name();
    const auto* r = msg.GetReflection();
    const auto field = [&](const char* n) { return type.FindFieldByName(n); };
    if (name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration") {
      const auto seconds = r->GetInt64(msg, field("seconds"));
      const auto nanos = r->GetInt32(msg, field("nanos"));
      const auto text = name == "google.protobuf.Timestamp" ? timestamp_text(seconds, nanos) : duration_text(seconds, nanos);
      if (!text)
        return false;
      sink_.string(*text);
      return true;
    }
    if (name == "google.protobuf.Empty") {
      sink_.begin_object();
      sink_.end_object();
      return true;
    }
    if (name == "google.protobuf.Struct")
      return map(msg, *field("fields"));
    if (name == "google.protobuf.ListValue")
      return list(msg, *field("values"));
    if (name == "google.protobuf.Value") {
      const auto* kind = r->GetOneofFieldDescriptor(msg, type.FindOneofByName("kind"));
      if (!kind)
        return false; // no kind: protobuf's printer says what it makes of it
      if (kind->name() == "number_value") {
        const double number = r->GetDouble(msg, kind);
        if (!std::isfinite(number))
          return false;
        sink_.number(number);
        return true;
      }
      return value(msg, *kind, -1);
    }
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "Value") == 0 && type.field_count() == 1 &&
        type.field(0)->name() == "value")
      return value(msg, *type.field(0), -1); // the wrappers: Int32Value, StringValue, ...
    return false; // Any, FieldMask, and what else google/protobuf/ holds
  }

  Sink& sink_;
  const field_orders& orders_;
};

} // namespace gather::grpc::walk
