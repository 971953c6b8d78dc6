// A rendered request message (proto3 JSON, an nlohmann value) as a message's bytes, set through
// protobuf's reflection on a DynamicMessage and serialized by protobuf (docs/grpc.md). It was
// dumped to text and parsed again by protobuf's JsonToBinaryString (a TypeResolver, a JSON stream
// parser, an object writer: ~35k instructions a book page for two small requests).
//
// This takes only what it is sure protobuf's parser takes the same way: members by JSON name or
// .proto name, integers as JSON integers or canonical decimal strings in range, floats from
// numbers (and "NaN", "Infinity", "-Infinity"), enums by name or number (a proto2 enum's named),
// bytes as padded standard base64, strings of valid UTF-8, repeated fields as arrays, maps as
// objects, nested messages, at most one member of a oneof, null as the default. Anything else (the
// well-known types, any other spelling, anything protobuf may refuse) leaves the whole message to
// JsonToBinaryString, so a refusal is always protobuf's own, with its own words
// (tests/downstream/grpc/grpc_encode_test.cpp holds the two to the same messages).
#include "gather/downstream/grpc/grpc_json.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include "gather/downstream/grpc/grpc_message_json.hpp"

namespace gather::grpc {

namespace pb = google::protobuf;
using nlohmann::json;
using field_type = pb::FieldDescriptor::CppType;

namespace {

/// Deeper than this is left to protobuf (its parser's own limit is 100).
constexpr int max_depth = 64;

/// "0" or -?[1-9][0-9]* within [min, max]: the integer strings taken here (protobuf's parser takes
/// more spellings; those go to it).
template <class T> bool integer_text(const std::string& text, T& out) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) {
    if (!std::numeric_limits<T>::is_signed)
      return false;
    i = 1;
  }
  if (i >= text.size() || text.size() - i > 20 || (text[i] == '0' && text.size() > i + 1) || (negative && text[i] == '0'))
    return false;
  std::uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (magnitude > (UINT64_MAX - digit) / 10)
      return false;
    magnitude = magnitude * 10 + digit;
  }
  if (negative) {
    if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<T>::max()) + 1)
      return false;
    out = static_cast<T>(-static_cast<std::int64_t>(magnitude - 1) - 1);
    return true;
  }
  if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
    return false;
  out = static_cast<T>(magnitude);
  return true;
}

template <class T> bool integer_of(const json& v, T& out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      return false;
    out = static_cast<T>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0 ? (!std::numeric_limits<T>::is_signed || i < static_cast<std::int64_t>(std::numeric_limits<T>::min()))
              : static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      return false;
    out = static_cast<T>(i);
    return true;
  }
  return v.is_string() && integer_text(v.get_ref<const std::string&>(), out);
}

/// A double from a JSON number protobuf reads as that double: an integer up to 2^53 (protobuf
/// refuses one a double cannot hold exactly), a finite float; or the mapping's three strings.
bool double_of(const json& v, double& out) {
  constexpr std::uint64_t exact = 1ULL << 53;
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    out = static_cast<double>(u);
    return u <= exact;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    out = static_cast<double>(i);
    return i >= -static_cast<std::int64_t>(exact) && i <= static_cast<std::int64_t>(exact);
  }
  if (v.is_number_float()) {
    out = v.get<double>();
    return std::isfinite(out); // nlohmann writes a NaN or an infinity as null
  }
  if (!v.is_string())
    return false;
  const auto& text = v.get_ref<const std::string&>();
  if (text == "NaN")
    out = std::numeric_limits<double>::quiet_NaN();
  else if (text == "Infinity")
    out = std::numeric_limits<double>::infinity();
  else if (text == "-Infinity")
    out = -std::numeric_limits<double>::infinity();
  else
    return false;
  return true;
}

/// Valid UTF-8, as nlohmann's writer checks it: what is not would go to protobuf replaced by
/// U+FFFD (encode_message_protobuf dumps with error_handler_t::replace), so it goes that way.
bool valid_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int more;
    unsigned low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      more = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      if (c == 0xE0)
        low = 0xA0;
      else if (c == 0xED)
        high = 0x9F; // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      if (c == 0xF0)
        low = 0x90;
      else if (c == 0xF4)
        high = 0x8F;
    } else
      return false;
    if (end - p <= more)
      return false;
    if (p[1] < low || p[1] > high)
      return false;
    for (int k = 2; k <= more; ++k)
      if (p[k] < 0x80 || p[k] > 0xBF)
        return false;
    p += more + 1;
  }
  return true;
}

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/// Padded standard base64 whose unused bits are zero (what base64 writers write).
bool unbase64(const std::string& text, std::string& out) {
  if (text.size() % 4 != 0)
    return false;
  out.clear();
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    int d[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4 - pad; ++k)
      if ((d[k] = base64_digit(text[i + static_cast<std::size_t>(k)])) < 0)
        return false;
    const unsigned v = (static_cast<unsigned>(d[0]) << 18) | (static_cast<unsigned>(d[1]) << 12) |
                       (static_cast<unsigned>(d[2]) << 6) | static_cast<unsigned>(d[3]);
    if ((pad == 1 && (v & 0xFF) != 0) || (pad == 2 && (v & 0xFFFF) != 0))
      return false;
    out += static_cast<char>(v >> 16);
    if (pad < 2)
      out += static_cast<char>((v >> 8) & 0xFF);
    if (pad < 1)
      out += static_cast<char>(v & 0xFF);
  }
  return true;
}

class encoder {
public:
  explicit encoder(const field_orders& orders) : orders_(orders) {}

  /// False: the message is left to protobuf's parser (nothing of `out` is used then).
  bool message(const json& in, pb::Message& out, int depth) {
    if (!in.is_object() || depth > max_depth)
      return false;
    const auto& order = orders_.of(*out.GetDescriptor());
    if (order.well_known)
      return false;
    const std::size_t seen_at = seen_.size();
    for (auto it = in.begin(); it != in.end(); ++it) {
      const auto* field = order.find(it.key());
      if (!field || !first_time(field, seen_at) ||
          (field->containing_oneof() && !first_time(field->containing_oneof(), seen_at)))
        return false; // unknown, named twice (its JSON and .proto names), a oneof's second member
      const json& v = it.value();
      if (v.is_null()) {
        if (field->containing_oneof() || field->enum_type() || field->message_type())
          return false; // what null means there (a oneof chosen, NullValue, Value) is protobuf's to say
        continue;       // the field's default: left unset
      }
      if (!member(v, out, *field, depth))
        return false;
    }
    seen_.resize(seen_at);
    return true;
  }

private:
  bool first_time(const void* what, std::size_t from) {
    for (std::size_t i = from; i < seen_.size(); ++i)
      if (seen_[i] == what)
        return false;
    seen_.push_back(what);
    return true;
  }

  bool member(const json& v, pb::Message& out, const pb::FieldDescriptor& field, int depth) {
    if (field.is_map())
      return map(v, out, field, depth);
    if (!field.is_repeated())
      return value(v, out, field, false, depth);
    if (!v.is_array())
      return false;
    for (const auto& element : v)
      if (element.is_null() || !value(element, out, field, true, depth))
        return false;
    return true;
  }

  bool map(const json& v, pb::Message& out, const pb::FieldDescriptor& field, int depth) {
    if (!v.is_object())
      return false;
    const auto& key_field = *field.message_type()->map_key();
    const auto& value_field = *field.message_type()->map_value();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.value().is_null())
        return false;
      auto& entry = *out.GetReflection()->AddMessage(&out, &field);
      if (!key(it.key(), entry, key_field) || !value(it.value(), entry, value_field, false, depth + 1))
        return false;
    }
    return true;
  }

  static bool key(const std::string& text, pb::Message& entry, const pb::FieldDescriptor& field) {
    const auto* r = entry.GetReflection();
    switch (field.cpp_type()) {
      case field_type::CPPTYPE_STRING:
        if (!valid_utf8(text))
          return false;
        r->SetString(&entry, &field, text);
        return true;
      case field_type::CPPTYPE_BOOL:
        if (text != "true" && text != "false")
          return false;
        r->SetBool(&entry, &field, text == "true");
        return true;
      default: return scalar(json(text), entry, field, false); // an integer key: its decimal text
    }
  }

  template <class T> using setter = void (pb::Reflection::*)(pb::Message*, const pb::FieldDescriptor*, T) const;

  /// `x` into `field`, set or (`add`) appended.
  template <class T>
  static bool put(pb::Message& out, const pb::FieldDescriptor& field, bool add, T x, setter<T> set, setter<T> append) {
    (out.GetReflection()->*(add ? append : set))(&out, &field, std::move(x));
    return true;
  }

  template <class T>
  static bool integral(const json& v, pb::Message& out, const pb::FieldDescriptor& field, bool add, setter<T> set,
                       setter<T> append) {
    T x;
    return integer_of(v, x) && put(out, field, add, x, set, append);
  }

  /// A scalar (a key's integer text too) into `field`, set or (`add`) appended.
  static bool scalar(const json& v, pb::Message& out, const pb::FieldDescriptor& field, bool add) {
    using R = pb::Reflection;
    switch (field.cpp_type()) {
      case field_type::CPPTYPE_INT32: return integral<std::int32_t>(v, out, field, add, &R::SetInt32, &R::AddInt32);
      case field_type::CPPTYPE_INT64: return integral<std::int64_t>(v, out, field, add, &R::SetInt64, &R::AddInt64);
      case field_type::CPPTYPE_UINT32:
        return integral<std::uint32_t>(v, out, field, add, &R::SetUInt32, &R::AddUInt32);
      case field_type::CPPTYPE_UINT64:
        return integral<std::uint64_t>(v, out, field, add, &R::SetUInt64, &R::AddUInt64);
      case field_type::CPPTYPE_DOUBLE: {
        double x;
        return double_of(v, x) && put(out, field, add, x, &R::SetDouble, &R::AddDouble);
      }
      case field_type::CPPTYPE_FLOAT: {
        double x; // out of a float's range: protobuf refuses it
        return double_of(v, x) && (!std::isfinite(x) || std::fabs(x) <= FLT_MAX) &&
               put(out, field, add, static_cast<float>(x), &R::SetFloat, &R::AddFloat);
      }
      case field_type::CPPTYPE_BOOL:
        return v.is_boolean() && put(out, field, add, v.get<bool>(), &R::SetBool, &R::AddBool);
      case field_type::CPPTYPE_ENUM: {
        // By name; by number any int32 for a proto3 (open) enum, as protobuf's parser takes it,
        // and only a named one for a proto2 enum, which protobuf's reflection holds closed.
        const auto* type = field.enum_type();
        std::int32_t number;
        if (v.is_string()) {
          const auto* named = type->FindValueByName(v.get_ref<const std::string&>());
          if (!named)
            return false;
          number = named->number();
        } else if (!v.is_number_integer() || !integer_of(v, number) ||
                   (type->file()->syntax() != pb::FileDescriptor::SYNTAX_PROTO3 && !type->FindValueByNumber(number))) {
          return false;
        }
        return type->full_name() != "google.protobuf.NullValue" &&
               put(out, field, add, number, &R::SetEnumValue, &R::AddEnumValue);
      }
      case field_type::CPPTYPE_STRING: {
        if (!v.is_string())
          return false;
        const auto& text = v.get_ref<const std::string&>();
        std::string bytes;
        if (field.type() == pb::FieldDescriptor::TYPE_BYTES)
          return unbase64(text, bytes) && put(out, field, add, std::move(bytes), &R::SetString, &R::AddString);
        return valid_utf8(text) && put(out, field, add, std::string(text), &R::SetString, &R::AddString);
      }
      case field_type::CPPTYPE_MESSAGE: return false; // value() has it
    }
    return false;
  }

  bool value(const json& v, pb::Message& out, const pb::FieldDescriptor& field, bool add, int depth) {
    if (field.cpp_type() != field_type::CPPTYPE_MESSAGE)
      return scalar(v, out, field, add);
    const auto* r = out.GetReflection();
    return message(v, add ? *r->AddMessage(&out, &field) : *r->MutableMessage(&out, &field), depth + 1);
  }

  const field_orders& orders_;
  std::vector<const void*> seen_; ///< the fields and oneofs of the messages being set, outer first
};

} // namespace

bool encode_message_direct(const message_types& types, const pb::Descriptor& type, const json& message,
                           std::string& bytes) {
  const pb::Message* prototype = types.factory.GetPrototype(&type);
  if (!prototype)
    return false;
  std::unique_ptr<pb::Message> out(prototype->New());
  const field_orders own;
  encoder writer(types.orders ? *types.orders : own);
  if (!writer.message(message, *out, 0))
    return false;
  bytes.clear();
  return out->SerializeToString(&bytes);
}

} // namespace gather::grpc
