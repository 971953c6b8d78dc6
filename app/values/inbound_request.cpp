#include "gather/values/inbound_request.hpp"

namespace gather {

std::string inbound_request::query_value(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? std::string{} : it->second;
}

std::string inbound_request::header_value(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

} // namespace gather
