// One answer of the shared store (RESP2, docs/shared.md), copied out of hiredis's reply so that
// nothing of hiredis reaches the callers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gather {

struct resp_value {
  enum class type : std::uint8_t { nil, integer, string, status, error, array };
  type what = type::nil;
  long long integer = 0;
  std::string text;             ///< string, status, error
  std::vector<resp_value> items; ///< array

  bool is_integer() const { return what == type::integer; }
  bool is_string() const { return what == type::string; }
  bool is_array() const { return what == type::array; }
};

} // namespace gather
