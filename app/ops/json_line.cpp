#include "gather/ops/json_line.hpp"

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

} // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t plain = 0; // start of the run of bytes copied as they are
  std::size_t i = 0;
  const auto flush = [&] { out.append(text.data() + plain, i - plain); };
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      std::size_t bad = 0;
      if (const auto length = utf8_sequence(text, i, bad)) {
        i += length;
        continue;
      }
      flush();
      out.append(replacement);
      i += bad;
      plain = i;
      continue;
    }
    flush();
    switch (c) {
    case '"': out.append("\\\""); break;
    case '\\': out.append("\\\\"); break;
    case '\b': out.append("\\b"); break;
    case '\f': out.append("\\f"); break;
    case '\n': out.append("\\n"); break;
    case '\r': out.append("\\r"); break;
    case '\t': out.append("\\t"); break;
    default:
      out.append("\\u00");
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
    ++i;
    plain = i;
  }
  flush();
  out.push_back('"');
}

} // namespace gather
