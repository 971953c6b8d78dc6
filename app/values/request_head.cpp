#include "gather/values/request_head.hpp"

#include <algorithm>

namespace gather {

namespace {
const std::string empty;
} // namespace

const std::string& request_head::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name)
      return value;
  return empty;
}

std::string request_head::header_list(std::string_view lower_name) const {
  std::string out;
  for (const auto& [name, value] : headers)
    if (name == lower_name)
      out.append(out.empty() ? "" : ", ").append(value);
  return out;
}

bool request_head::has_header(std::string_view lower_name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return h.first == lower_name; });
}

} // namespace gather
