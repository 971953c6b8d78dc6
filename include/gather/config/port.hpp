// A TCP port as written in an address or a URL: the one parser every part uses.
#pragma once

#include <optional>
#include <string_view>

namespace gather {

/// 1 to 5 decimal digits naming 0..65535; nullopt for anything else (empty, a sign, a space, more).
/// Callers that need a port a socket can connect to also refuse 0.
std::optional<int> parse_port(std::string_view text);

} // namespace gather
