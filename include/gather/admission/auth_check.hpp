// What `gather check` (and serve, and every reload) finds in the files a config's auth names: each
// route's jwks_file must be readable and hold at least one usable key, and no key of a supported
// type may be malformed. A jwks_url is never fetched by a check.
#pragma once

#include <string>
#include <vector>

#include "gather/config/config.hpp"

namespace gather {

/// Problems by JSON path, e.g. `routes[0].auth.jwt.jwks_file: "/etc/gather/jwks.json" has no usable key (...)`.
std::vector<std::string> auth_problems(const config& cfg);

} // namespace gather
