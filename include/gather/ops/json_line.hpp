// One JSON object written straight into a string: the request log's line without building a
// nlohmann::json tree first (that tree cost about 29 allocations and 6% of the CPU of a
// one-section request; docs/performance.md). Keys and string values are escaped as JSON
// requires, invalid UTF-8 replaced by U+FFFD, so a downstream's bytes can never break the line.
//
// The line is written through a pointer into a string sized up front (`expected`), each piece
// checking only that it fits: one allocation per line, and no std::string append per quote, key
// and comma (issue #22's profile: ~12.7k instructions per four-section line before, ~4.0k after;
// docs/performance.md).
#pragma once

#include <cassert>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace gather {

/// Appends `text` as a JSON string (quotes included): `"` and `\` escaped, control characters as
/// \b \f \n \r \t or \u00XX, every ill-formed UTF-8 sequence (by its maximal subpart, as Unicode
/// recommends) as U+FFFD.
void append_json_string(std::string& out, std::string_view text);

/// A key of a json_line. A key written in the code is a string literal of plain ASCII, which JSON
/// writes as it is: the constructor from a literal decides that at compile time (`plain()`, folded
/// away), so such a key is copied, never scanned. A key that does need escaping (or one built from
/// run-time text, `json_key{text}`) is escaped like any string value: the line is right either way.
class json_key {
public:
  template <std::size_t N>
  constexpr json_key(const char (&literal)[N]) noexcept // NOLINT: implicit, literals are keys
    : text_(literal, N - 1), plain_(needs_no_escaping(text_)) {}
  constexpr explicit json_key(std::string_view text) noexcept
    : text_(text), plain_(needs_no_escaping(text)) {}

  constexpr std::string_view text() const noexcept { return text_; }
  /// Written as it is: printable ASCII but `"` and `\`.
  constexpr bool plain() const noexcept { return plain_; }

  static constexpr bool needs_no_escaping(std::string_view text) noexcept {
    for (const char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
        return false;
    }
    return true;
  }

private:
  std::string_view text_;
  bool plain_;
};

class json_line {
public:
  /// `expected`: about the bytes the line will take (a longer line grows the string once more).
  explicit json_line(std::size_t expected = 320) {
    out_.resize(expected < 16 ? 16 : expected);
    out_[0] = '{';
    used_ = 1;
  }

  json_line& field(json_key key, std::string_view value) {
    key_(key);
    string_(value);
    return *this;
  }
  json_line& field(json_key key, const char* value) { return field(key, std::string_view{value}); }
  json_line& field(json_key key, const std::string& value) { return field(key, std::string_view{value}); }

  /// A value the code names, not one that came in: an enum's name (`to_string(section_status)`),
  /// printable ASCII but `"` and `\` as json_key::plain() says. Copied as it is, never scanned:
  /// the log line's eight enum values a four-section request were ~600 instructions scanned.
  json_line& plain_field(json_key key, std::string_view value) {
    assert(json_key::needs_no_escaping(value));
    key_(key);
    ensure(value.size() + 2);
    char* p = at();
    *p++ = '"';
    std::memcpy(p, value.data(), value.size());
    p += value.size();
    *p++ = '"';
    used_ = static_cast<std::size_t>(p - out_.data());
    return *this;
  }

  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  json_line& field(json_key key, Int value) {
    key_(key);
    ensure(24);
    used_ = static_cast<std::size_t>(std::to_chars(at(), at() + 24, value).ptr - out_.data());
    return *this;
  }

  json_line& field(json_key key, bool value) {
    key_(key);
    ensure(5);
    for (const char c : std::string_view{value ? "true" : "false"})
      out_[used_++] = c;
    return *this;
  }

  /// The shortest text that reads back as `value` (std::to_chars), as nlohmann prints it.
  json_line& field(json_key key, double value) {
    key_(key);
    ensure(32);
    used_ = static_cast<std::size_t>(std::to_chars(at(), at() + 32, value).ptr - out_.data());
    return *this;
  }

  /// `unix_micros / 1e6` as field(key, double) prints it (the shortest text that reads back as
  /// that double), without the double's formatting where it is not needed: a time between 1970
  /// and 2106 with a fraction of a second is its seconds, a point and the microseconds without
  /// their trailing zeros, exactly (json_line_test checks this against std::to_chars).
  json_line& unix_time(json_key key, std::int64_t unix_micros);

  /// A nested object under `key`, up to the matching close().
  json_line& open(json_key key) {
    key_(key);
    ensure(1);
    out_[used_++] = '{';
    first_ = true;
    return *this;
  }
  json_line& close() {
    ensure(1);
    out_[used_++] = '}';
    first_ = false;
    return *this;
  }

  /// The line, without its newline (room is left for one: write_log_line adds it in place).
  std::string done() && {
    ensure(2);
    out_[used_++] = '}';
    out_.resize(used_);
    return std::move(out_);
  }

private:
  char* at() noexcept { return out_.data() + used_; }

  /// At least `n` bytes free after used_.
  void ensure(std::size_t n) {
    if (out_.size() - used_ < n)
      grow(n);
  }
  void grow(std::size_t n);

  void key_(json_key key) {
    if (!key.plain())
      return escaped_key_(key.text());
    const auto text = key.text();
    ensure(text.size() + 4);
    char* p = at();
    *p = ',';
    p += first_ ? 0 : 1;
    *p++ = '"';
    std::memcpy(p, text.data(), text.size());
    p += text.size();
    *p++ = '"';
    *p++ = ':';
    used_ = static_cast<std::size_t>(p - out_.data());
    first_ = false;
  }
  void escaped_key_(std::string_view key);
  void string_(std::string_view text);

  std::string out_; ///< [0, used_) is the line; the rest is room, sized by `expected` and grow()
  std::size_t used_;
  bool first_ = true;
};

} // namespace gather
