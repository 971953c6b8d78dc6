// An inbound query string, decoded into its parameters (the `{query.q}` of a section's url).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace gather {

/// "a=1&b=x%20y" -> {{"a","1"},{"b","x y"}} ('+' is a space, as browsers send forms).
std::multimap<std::string, std::string> parse_query(std::string_view query);

} // namespace gather
