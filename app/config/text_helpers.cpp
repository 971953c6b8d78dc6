// Text helpers of the config reader: JSON paths, splitting and joining, character classes.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

/// RFC 9110 token characters: what a header name may be made of.
bool is_token_char(char c) {
  return is_alpha(c) || is_digit(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

} // namespace

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string member_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string element_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const std::size_t at = text.find(separator);
    pieces.push_back(text.substr(0, at));
    if (at == std::string_view::npos)
      return pieces;
    text.remove_prefix(at + 1);
  }
}

std::string join(const std::vector<std::string>& pieces, std::string_view separator) {
  std::string out;
  for (const std::string& piece : pieces)
    out += (out.empty() ? "" : std::string(separator)) + piece;
  return out;
}

bool is_route_method(std::string_view method) {
  return method == "GET" || method == "POST" || method == "PUT" || method == "PATCH" ||
         method == "DELETE";
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_section_name(std::string_view name) {
  return !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_'; });
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

std::string lower_case(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

std::optional<field_path> parse_dotted(std::string_view text) {
  field_path path;
  for (const std::string_view piece : split(text, '.')) {
    if (piece.empty())
      return std::nullopt;
    path.emplace_back(piece);
  }
  return path;
}

} // namespace gather::config_reader
