#include "gather/admission/auth_check.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gather/admission/jwk_set.hpp"

namespace gather {

std::vector<std::string> auth_problems(const config& cfg) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    const auto& auth = cfg.routes[i].auth;
    if (!auth || auth->jwt.jwks_file.empty())
      continue;
    const std::string path = "routes[" + std::to_string(i) + "].auth.jwt.jwks_file: ";
    const std::string& file = auth->jwt.jwks_file;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      problems.push_back(path + "cannot read \"" + file + "\": " + std::strerror(errno));
      continue;
    }
    std::stringstream text;
    text << in.rdbuf();
    const auto set = parse_jwk_set(text.str());
    if (!set.value) {
      problems.push_back(path + "\"" + file + "\" is " + set.problem);
      continue;
    }
    for (const auto& why : set.invalid)
      problems.push_back(path + "\"" + file + "\" " + why);
    if (set.value->keys.empty() && set.invalid.empty()) {
      std::string reasons;
      for (const auto& why : set.skipped)
        reasons += (reasons.empty() ? "" : "; ") + why;
      problems.push_back(path + "\"" + file + "\" has no usable key" +
                         (reasons.empty() ? std::string{} : " (" + reasons + ")"));
    }
  }
  return problems;
}

} // namespace gather
