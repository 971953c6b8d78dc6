#include "gather/answer/json_member.hpp"

#include <cstdint>
#include <string>

#include "gather/config/url_template.hpp"

namespace gather {

namespace {

constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// A cursor over JSON text that skips values without building them. Every step checks the end of
/// the text: on text that is not valid JSON it stops, never reads past it.
class json_cursor {
public:
  explicit json_cursor(std::string_view text) : text_(text) {}

  std::size_t at() const { return at_; }
  bool is(char c) const { return at_ < text_.size() && text_[at_] == c; }
  void step() { ++at_; }
  void skip_space() {
    while (at_ < text_.size() && is_space(text_[at_]))
      ++at_;
  }

  /// From an opening quote to past its closing one; false when the text ends first.
  bool skip_string() {
    ++at_;
    for (;;) {
      const auto quote = text_.find('"', at_);
      if (quote == std::string_view::npos) {
        at_ = text_.size();
        return false;
      }
      std::size_t backslashes = 0;
      for (auto b = quote; b > at_ && text_[b - 1] == '\\'; --b)
        ++backslashes;
      at_ = quote + 1;
      if (backslashes % 2 == 0)
        return true;
    }
  }

  /// Past one value (string, object, array or scalar); false when the text ends first.
  bool skip_value() {
    if (is('"'))
      return skip_string();
    if (is('{') || is('[')) {
      std::size_t depth = 0;
      while (at_ < text_.size()) {
        const char c = text_[at_];
        if (c == '"') {
          if (!skip_string())
            return false;
          continue;
        }
        if (c == '{' || c == '[')
          ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) {
          ++at_;
          return true;
        }
        ++at_;
      }
      return false;
    }
    const auto from = at_;
    while (at_ < text_.size() && !is_space(text_[at_]) && text_[at_] != ',' && text_[at_] != '}' &&
           text_[at_] != ']')
      ++at_;
    return at_ > from;
  }

private:
  std::string_view text_;
  std::size_t at_ = 0;
};

/// Four hex digits at `text[at]`; -1 when they are not.
long hex4(std::string_view text, std::size_t at) {
  if (at + 4 > text.size())
    return -1;
  long value = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const int d = hex_digit(text[at + i]);
    if (d < 0)
      return -1;
    value = value * 16 + d;
  }
  return value;
}

void put_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

/// A string's content (between its quotes) with its escapes decoded.
std::string unescaped(std::string_view raw) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        long code = hex4(raw, i + 1);
        if (code < 0) {
          out += e;
          break;
        }
        i += 4;
        if (code >= 0xD800 && code < 0xDC00 && i + 2 < raw.size() && raw[i + 1] == '\\' &&
            raw[i + 2] == 'u') {
          const long low = hex4(raw, i + 3);
          if (low >= 0xDC00 && low < 0xE000) {
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          }
        }
        put_utf8(out, static_cast<std::uint32_t>(code));
        break;
      }
      default: out += e; // " \ /
    }
  }
  return out;
}

bool key_is(std::string_view raw, const std::string& key) {
  if (raw.find('\\') == std::string_view::npos)
    return raw == key;
  return unescaped(raw) == key;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

} // namespace

std::optional<std::string_view> find_member(std::string_view json, const field_path& path) {
  std::string_view value = trimmed(json);
  for (const auto& key : path) {
    json_cursor cursor{value};
    if (!cursor.is('{'))
      return std::nullopt;
    cursor.step();
    std::optional<std::string_view> found;
    for (;;) {
      cursor.skip_space();
      if (!cursor.is('"'))
        break; // `}`: the object's end
      const auto key_at = cursor.at();
      if (!cursor.skip_string())
        return std::nullopt;
      const auto raw = value.substr(key_at + 1, cursor.at() - key_at - 2);
      cursor.skip_space();
      if (!cursor.is(':'))
        return std::nullopt;
      cursor.step();
      cursor.skip_space();
      const auto value_at = cursor.at();
      if (!cursor.skip_value())
        return std::nullopt;
      if (key_is(raw, key))
        found = value.substr(value_at, cursor.at() - value_at);
      cursor.skip_space();
      if (!cursor.is(','))
        break;
      cursor.step();
    }
    if (!found)
      return std::nullopt;
    value = *found;
  }
  return value;
}

} // namespace gather
