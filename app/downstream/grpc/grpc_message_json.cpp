// A parsed message as JSON, read through protobuf's reflection (docs/grpc.md, "Messages and
// JSON"): the same JSON values protobuf's own printer gives with the gateway's print choices
// (names as the .proto writes them, every field printed with its default, enums by name), without
// its TypeResolver pipeline, which re-parsed the bytes, built a tree of defaults and printed text
// that was then parsed again (bench/callgrind_table.sh: 64% of the book page's instructions).
// What this writer does not know (google.protobuf.Any, FieldMask, a Value with no kind, a time
// out of RFC 3339's range) answers nullopt, and the caller takes protobuf's printer instead: the
// two agree on everything else (tests/downstream/grpc/grpc_json_test.cpp compares them).
#include "gather/downstream/grpc/grpc_message_json.hpp"

#include "grpc/message_walk.hpp"

#include <cerrno>
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

namespace walk {

double float_value(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", static_cast<double>(value));
  errno = 0; // a subnormal reads back with ERANGE, which protobuf takes as "not the same"
  const float back = std::strtof(text, nullptr);
  if (back != value || errno == ERANGE)
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  return std::strtod(text, nullptr);
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

namespace {

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

} // namespace

std::optional<std::string> timestamp_text(std::int64_t seconds, std::int32_t nanos) {
  // 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z, as RFC 3339 allows.
  if (seconds < -62135596800LL || seconds > 253402300799LL || nanos < 0 || nanos > 999999999)
    return std::nullopt;
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[40];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return std::string(text) + nanos_text(nanos) + "Z";
}

std::optional<std::string> duration_text(std::int64_t seconds, std::int32_t nanos) {
  if (seconds < -315576000000LL || seconds > 315576000000LL || nanos < -999999999 || nanos > 999999999 ||
      (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0))
    return std::nullopt;
  const bool negative = seconds < 0 || nanos < 0;
  return std::string(negative ? "-" : "") + std::to_string(std::llabs(seconds)) + nanos_text(std::abs(nanos)) + "s";
}

std::string map_key(const pb::Message& entry, const pb::FieldDescriptor& key_field) {
  const auto* r = entry.GetReflection();
  switch (key_field.cpp_type()) {
    case field_type::CPPTYPE_INT32: return std::to_string(r->GetInt32(entry, &key_field));
    case field_type::CPPTYPE_UINT32: return std::to_string(r->GetUInt32(entry, &key_field));
    case field_type::CPPTYPE_INT64: return std::to_string(r->GetInt64(entry, &key_field));
    case field_type::CPPTYPE_UINT64: return std::to_string(r->GetUInt64(entry, &key_field));
    case field_type::CPPTYPE_BOOL: return r->GetBool(entry, &key_field) ? "true" : "false";
    default: return r->GetString(entry, &key_field); // a string: protobuf allows no other key
  }
}

} // namespace walk

const field_orders::type_order& field_orders::of(const pb::Descriptor& type) const {
  {
    std::shared_lock lock(mutex_);
    if (const auto it = types_.find(&type); it != types_.end())
      return *it->second;
  }
  auto made = std::make_unique<type_order>();
  made->well_known = type.file()->name().rfind("google/protobuf/", 0) == 0;
  for (int i = 0; i < type.field_count(); ++i)
    made->fields.push_back({type.field(i), "\"" + type.field(i)->name() + "\":"});
  for (int i = 0; i < type.field_count(); ++i)
    made->by_key.emplace(type.field(i)->json_name(), type.field(i));
  for (int i = 0; i < type.field_count(); ++i) // a JSON name wins over another field's .proto name
    made->by_key.emplace(type.field(i)->name(), type.field(i));
  std::sort(made->fields.begin(), made->fields.end(),
            [](const field_key& a, const field_key& b) { return a.field->name() < b.field->name(); });
  std::unique_lock lock(mutex_);
  return *types_.emplace(&type, std::move(made)).first->second; // a racing thread's, if it came first
}

namespace {

/// Builds the nlohmann value: each object or array open on a stack with the key it goes under.
class value_sink {
public:
  void begin_object() { open(json::object()); }
  void begin_array() { open(json::array()); }
  void end_object() { close(); }
  void end_array() { close(); }
  void field(const field_orders::field_key& key) { key_ = key.field->name(); }
  void key(const std::string& key) { key_ = key; }
  void element() {}
  void integer(std::int64_t v) { put(v); }
  void unsigned_integer(std::uint64_t v) { put(v); }
  void quoted(std::int64_t v) { put(std::to_string(v)); }
  void quoted(std::uint64_t v) { put(std::to_string(v)); }
  void string(const std::string& text) { put(text); }
  void number(double v) { put(v); }
  void boolean(bool v) { put(v); }
  void null() { put(nullptr); }
  json take() { return std::move(result_); }

private:
  void put(json value) {
    if (open_.empty())
      result_ = std::move(value);
    else if (open_.back().is_array())
      open_.back().push_back(std::move(value));
    else
      open_.back()[key_] = std::move(value);
  }
  void open(json value) {
    open_.push_back(std::move(value));
    keys_.push_back(std::move(key_));
  }
  void close() {
    json value = std::move(open_.back());
    open_.pop_back();
    key_ = std::move(keys_.back());
    keys_.pop_back();
    put(std::move(value));
  }

  std::vector<json> open_;
  std::vector<std::string> keys_;
  std::string key_;
  json result_;
};

} // namespace

std::optional<nlohmann::json> message_json(const pb::Message& message, const field_orders* orders) {
  const field_orders own;
  value_sink sink;
  walk::walker<value_sink> walker(sink, orders ? *orders : own);
  if (!walker.message(message))
    return std::nullopt;
  return sink.take();
}

} // namespace gather::grpc
