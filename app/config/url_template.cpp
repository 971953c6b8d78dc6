#include "gather/config/url_template.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gather {

namespace {

bool is_unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool is_only_dots(std::string_view value) {
  return !value.empty() && value.find_first_not_of('.') == std::string_view::npos;
}

void append_escaped(std::string& out, unsigned char c) {
  static constexpr char digits[] = "0123456789ABCDEF";
  out += '%';
  out += digits[c >> 4];
  out += digits[c & 0x0F];
}

/// Doubles up to 2^53 are exact integers; beyond that JSON's own notation is clearer.
constexpr double max_exact_integer = 9007199254740992.0;

} // namespace

std::string percent_encode(std::string_view value) {
  // "." and ".." are unreserved but would remove or climb a path segment once substituted.
  const bool encode_all = is_only_dots(value);
  std::string out;
  out.reserve(value.size() * 3);
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_unreserved(c) && !encode_all)
      out += ch;
    else
      append_escaped(out, c);
  }
  return out;
}

std::string percent_decode(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size() && hex_digit(value[i + 1]) >= 0 &&
        hex_digit(value[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(value[i + 1]) * 16 + hex_digit(value[i + 2]));
      i += 2;
    } else {
      out += value[i];
    }
  }
  return out;
}

namespace {

/// Encodes the dots of every path segment that holds a substituted value and is nothing but dots.
/// Encoded values are never dot segments themselves, but an empty value beside literal dots can
/// still make one ("/a/{query.x}./b" with x empty is "/a/./b", which clients collapse to "/a/b").
/// `value_at` lists where each value starts and ends in `url`.
std::string encode_dot_segments(const std::string& url, const std::vector<std::size_t>& value_at) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return url;
  const std::size_t path_start = url.find_first_of("/?#", scheme_end + 3);
  if (path_start == std::string::npos || url[path_start] != '/')
    return url;
  const std::size_t path_end = std::min(url.find_first_of("?#", path_start), url.size());
  std::string out = url.substr(0, path_start + 1);
  for (std::size_t start = path_start + 1;;) {
    const std::size_t end = std::min(url.find('/', start), path_end);
    const std::string_view segment(url.data() + start, end - start);
    const bool holds_value = std::any_of(value_at.begin(), value_at.end(), [&](std::size_t at) {
      return at >= start && at <= end;
    });
    if (holds_value && is_only_dots(segment)) {
      for (std::size_t i = 0; i < segment.size(); ++i)
        out += "%2E";
    } else {
      out += segment;
    }
    if (end == path_end)
      break;
    out += '/';
    start = end + 1;
  }
  out.append(url, path_end, std::string::npos);
  return out;
}

} // namespace

std::optional<std::string> render_url(const url_template& tpl,
                                      const placeholder_resolver& resolve) {
  std::string url;
  url.reserve(tpl.source.size());
  std::vector<std::size_t> value_at; // where each substituted value starts and ends
  for (const url_part& part : tpl.parts) {
    if (part.what == url_part::kind::literal) {
      url += part.text;
      continue;
    }
    const std::optional<std::string> value = resolve(part);
    if (!value)
      return std::nullopt;
    value_at.push_back(url.size());
    url += percent_encode(*value);
    value_at.push_back(url.size());
  }
  if (value_at.empty())
    return url;
  return encode_dot_segments(url, value_at);
}

std::optional<std::string> scalar_text(const nlohmann::json& value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_boolean())
    return value.get<bool>() ? "true" : "false";
  if (value.is_number_float()) {
    // A downstream that writes 42.0 for an id still means the id 42.
    const double number = value.get<double>();
    if (std::trunc(number) == number && std::fabs(number) <= max_exact_integer)
      return std::to_string(static_cast<std::int64_t>(number));
    return value.dump();
  }
  if (value.is_number())
    return value.dump();
  return std::nullopt;
}

std::optional<nlohmann::json> render_json_template(const nlohmann::json& tpl,
                                                   const std::vector<message_placeholder>& placeholders,
                                                   const std::vector<bool>& as_text,
                                                   const json_value_resolver& resolve) {
  nlohmann::json out = tpl;
  std::vector<nlohmann::json::json_pointer> absent; // left out once every placeholder is in
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const auto& placeholder = placeholders[i];
    const nlohmann::json::json_pointer pointer(placeholder.pointer);
    auto& target = out[pointer];
    if (placeholder.whole) {
      auto value = resolve(placeholder.text.parts.front());
      if (!value)
        return std::nullopt;
      if (value->is_discarded()) {
        absent.push_back(pointer);
        continue;
      }
      const bool text = i < as_text.size() && as_text[i];
      if (text && !value->is_string()) {
        auto scalar = scalar_text(*value);
        if (!scalar)
          return std::nullopt;
        target = std::move(*scalar);
      } else {
        target = std::move(*value);
      }
      continue;
    }
    std::string text;
    for (const auto& part : placeholder.text.parts) {
      if (part.what == url_part::kind::literal) {
        text += part.text;
        continue;
      }
      const auto value = resolve(part);
      if (value && value->is_discarded())
        continue; // an absent value is empty text
      const auto scalar = value ? scalar_text(*value) : std::nullopt;
      if (!scalar)
        return std::nullopt;
      text += *scalar;
    }
    target = std::move(text);
  }
  // Last first: an array's later elements keep their places while earlier ones are set.
  for (auto it = absent.rbegin(); it != absent.rend(); ++it) {
    if (it->empty()) {
      out = nlohmann::json::object();
      continue;
    }
    auto& parent = out[it->parent_pointer()];
    if (parent.is_object())
      parent.erase(it->back());
    else
      out[*it] = nullptr;
  }
  return out;
}

const nlohmann::json* find_field(const nlohmann::json& value, const field_path& path) {
  const nlohmann::json* current = &value;
  for (const std::string& key : path) {
    if (!current->is_object())
      return nullptr;
    const auto it = current->find(key);
    if (it == current->end())
      return nullptr;
    current = &*it;
  }
  return current;
}

} // namespace gather
