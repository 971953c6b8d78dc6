// ASCII text in lower case (HTTP header names compare without case): one definition for the test
// clients and the tests (the test binary is a unity build, where a copy per file would clash).
#pragma once

#include <cctype>
#include <string>

namespace gather::test {

inline std::string ascii_lower(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

} // namespace gather::test
