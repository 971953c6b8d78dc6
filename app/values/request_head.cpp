#include "gather/values/request_head.hpp"

#include <algorithm>

namespace gather {

namespace {
const std::string empty;
} // namespace

const std::string& request_head::header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name)
      return value;
  return empty;
}

bool request_head::has_header(const std::string& lower_name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return h.first == lower_name; });
}

} // namespace gather
