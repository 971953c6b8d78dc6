#include "gather/cluster/origin_allowlist.hpp"

#include "gather/downstream/call/downstream_client.hpp"

namespace gather {

origin_allowlist origin_allowlist::any() {
  origin_allowlist out;
  out.any_ = true;
  return out;
}

std::optional<origin_allowlist> origin_allowlist::of(const std::set<std::string>& origins,
                                                     std::string& problem) {
  origin_allowlist out;
  for (const auto& text : origins) {
    // scheme://host:port exactly: no path, no default port left implicit.
    const auto origin = url_origin(text);
    const auto authority = text.find("://");
    const bool bare = authority != std::string::npos &&
                      text.find_first_of("/?#", authority + 3) == std::string::npos;
    const auto colon = text.rfind(':');
    if (!origin || !bare || colon == authority || text.back() == ']') {
      problem = "--allow " + text + ": must be scheme://host:port (http or https, e.g. http://10.0.0.7:9001)";
      return std::nullopt;
    }
    out.origins_.insert(*origin);
  }
  return out;
}

bool origin_allowlist::allows(const std::string& url, std::string& origin) const {
  if (any_) // nothing to parse: a gateway's workers ask on every attempt
    return true;
  const auto found = url_origin(url);
  origin = found ? *found : url;
  return found && origins_.count(*found) > 0;
}

} // namespace gather
