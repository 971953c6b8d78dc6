// One JSON object written straight into a string: the request log's line without building a
// nlohmann::json tree first (that tree cost about 29 allocations and 6% of the CPU of a
// one-section request; docs/performance.md). Keys and string values are escaped as JSON
// requires, invalid UTF-8 replaced by U+FFFD, so a downstream's bytes can never break the line.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace gather {

/// Appends `text` as a JSON string (quotes included): `"` and `\` escaped, control characters as
/// \b \f \n \r \t or \u00XX, every ill-formed UTF-8 sequence (by its maximal subpart, as Unicode
/// recommends) as U+FFFD.
void append_json_string(std::string& out, std::string_view text);

class json_line {
public:
  json_line() {
    out_.reserve(320);
    out_.push_back('{');
  }

  json_line& field(std::string_view key, std::string_view value) {
    key_(key);
    append_json_string(out_, value);
    return *this;
  }
  json_line& field(std::string_view key, const char* value) { return field(key, std::string_view{value}); }
  json_line& field(std::string_view key, const std::string& value) {
    return field(key, std::string_view{value});
  }

  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  json_line& field(std::string_view key, Int value) {
    key_(key);
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out_.append(digits, end);
    return *this;
  }

  /// The shortest text that reads back as `value` (std::to_chars), as nlohmann prints it.
  json_line& field(std::string_view key, double value) {
    key_(key);
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out_.append(digits, end);
    return *this;
  }

  /// A nested object under `key`, up to the matching close().
  json_line& open(std::string_view key) {
    key_(key);
    out_.push_back('{');
    first_ = true;
    return *this;
  }
  json_line& close() {
    out_.push_back('}');
    first_ = false;
    return *this;
  }

  /// The line, without its newline.
  std::string done() && {
    out_.push_back('}');
    return std::move(out_);
  }

private:
  void key_(std::string_view key) {
    if (!first_)
      out_.push_back(',');
    first_ = false;
    append_json_string(out_, key);
    out_.push_back(':');
  }

  std::string out_;
  bool first_ = true;
};

} // namespace gather
