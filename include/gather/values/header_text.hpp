// Small text rules of HTTP header values that several stages read (Accept lists, CORS lists).
#pragma once

#include <string>
#include <string_view>

namespace gather {

/// Without the optional whitespace (spaces, tabs) around a list element (RFC 9110 §5.6.1).
inline std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

/// ASCII lower case: header names, media types, codings and origins compare case-insensitively.
inline char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    c = lower_ascii(c);
  return out;
}

} // namespace gather
