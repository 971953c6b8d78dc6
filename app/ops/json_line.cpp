#include "gather/ops/json_line.hpp"

#include "gather/values/json_plain.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace gather {

namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD"; // U+FFFD

/// The length of the well-formed UTF-8 sequence at `text[i]` (RFC 3629, table 3-7 of the
/// Unicode standard), or 0 with `bad` set to the bytes of its maximal ill-formed subpart.
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::size_t& bad) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF; // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0)
      low = 0xA0; // no overlong forms
    if (lead == 0xED)
      high = 0x9F; // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0)
      low = 0x90; // no overlong forms
    if (lead == 0xF4)
      high = 0x8F; // nothing above U+10FFFF
  } else {
    bad = 1; // a continuation byte alone, C0, C1, F5..FF
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) {
      bad = k;
      return 0;
    }
    const unsigned char next = byte(i + k);
    const bool fits = k == 1 ? next >= low && next <= high : next >= 0x80 && next <= 0xBF;
    if (!fits) {
      bad = k;
      return 0;
    }
  }
  return length;
}


std::size_t copy_plain(char* out, std::string_view text) { return copy_plain_json(out, text); }

/// Writes `text` from its byte `i` on, escaped, at `out`, which has room for 6 bytes per byte
/// left (the most one byte can become: \u00XX; U+FFFD's 3 bytes replace at least one); returns
/// the end.
char* write_escaped(char* out, std::string_view text, std::size_t i) {
  static constexpr char hex[] = "0123456789abcdef";
  const auto put = [&](std::string_view piece) {
    std::memcpy(out, piece.data(), piece.size());
    out += piece.size();
  };
  while (i < text.size()) {
    if (const auto plain = copy_plain(out, text.substr(i))) {
      out += plain;
      i += plain;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t bad = 0;
      if (const auto length = utf8_sequence(text, i, bad)) {
        put(text.substr(i, length));
        i += length;
      } else {
        put(replacement);
        i += bad;
      }
      continue;
    }
    switch (c) {
    case '"': put("\\\""); break;
    case '\\': put("\\\\"); break;
    case '\b': put("\\b"); break;
    case '\f': put("\\f"); break;
    case '\n': put("\\n"); break;
    case '\r': put("\\r"); break;
    case '\t': put("\\t"); break;
    default:
      put("\\u00");
      *out++ = hex[c >> 4];
      *out++ = hex[c & 0xF];
    }
    ++i;
  }
  return out;
}

} // namespace

void append_json_string(std::string& out, std::string_view text) {
  const std::size_t start = out.size();
  out.resize(start + 6 * text.size() + 2);
  char* p = out.data() + start;
  *p++ = '"';
  p = write_escaped(p, text, 0);
  *p++ = '"';
  out.resize(static_cast<std::size_t>(p - out.data()));
}

void json_line::grow(std::size_t n) {
  out_.resize(std::max(2 * out_.size(), used_ + n));
}

void json_line::string_(std::string_view text) {
  // Room for the text as it is; only a text that needs escaping asks for the worst case.
  ensure(text.size() + 2);
  char* p = at();
  *p++ = '"';
  const auto plain = copy_plain(p, text);
  p += plain;
  if (plain < text.size()) {
    used_ = static_cast<std::size_t>(p - out_.data());
    ensure(6 * (text.size() - plain) + 1);
    p = write_escaped(at(), text, plain);
  }
  *p++ = '"';
  used_ = static_cast<std::size_t>(p - out_.data());
}

void json_line::escaped_key_(std::string_view key) {
  ensure(1);
  if (!first_)
    out_[used_++] = ',';
  first_ = false;
  string_(key);
  ensure(1);
  out_[used_++] = ':';
}

json_line& json_line::unix_time(json_key key, std::int64_t unix_micros) {
  constexpr std::int64_t million = 1000000;
  const std::int64_t seconds = unix_micros / million, fraction = unix_micros % million;
  // Below 2^32 s a double's step is under 1e-6 s: of the texts that read back as the double
  // nearest to unix_micros / 1e6 (all within one step of each other) only one can have 6
  // decimals or fewer, the quotient's own, so it is the shortest; with a fraction its fixed form
  // is shorter than its exponent form. Elsewhere (0, whole seconds, negative, after 2106)
  // std::to_chars decides.
  if (seconds <= 0 || fraction == 0 || seconds >= (std::int64_t{1} << 32))
    return field(key, static_cast<double>(unix_micros) / 1e6);
  key_(key);
  ensure(24);
  char* p = std::to_chars(at(), at() + 12, seconds).ptr;
  *p++ = '.';
  auto digits = static_cast<std::uint32_t>(fraction);
  for (int k = 5; k >= 0; --k) {
    p[k] = static_cast<char>('0' + digits % 10);
    digits /= 10;
  }
  p += 6;
  while (p[-1] == '0') // the trailing zeros go (the fraction is not 0: a digit before them is not)
    --p;
  used_ = static_cast<std::size_t>(p - out_.data());
  return *this;
}

} // namespace gather
