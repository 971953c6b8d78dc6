#include "gather/front/request_id.hpp"

#include <cctype>
#include <random>

namespace gather {

namespace {

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64)
    return false;
  for (unsigned char c : id)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    auto bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4)
      id[half * 16 + i] = hex[bits & 0xF];
  }
  return id;
}

} // namespace

std::string request_id_for(const request_head& head) {
  const auto& inbound = head.header("x-request-id");
  return valid_request_id(inbound) ? inbound : new_request_id();
}

} // namespace gather
