#include "gather/downstream/url_split.hpp"

#include "gather/config/port.hpp"

#include <algorithm>

namespace gather {

std::optional<origin_and_target> split_url(const std::string& url) {
  origin_and_target out;
  std::size_t at;
  if (url.rfind("http://", 0) == 0) {
    at = 7;
  } else if (url.rfind("https://", 0) == 0) {
    out.tls = true;
    at = 8;
  } else {
    return std::nullopt;
  }
  const auto slash = url.find_first_of("/?", at);
  const std::string authority = url.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
  out.target = slash == std::string::npos ? "/" : url.substr(slash);
  if (out.target[0] == '?')
    out.target = "/" + out.target;
  if (authority.empty() || authority.find('@') != std::string::npos)
    return std::nullopt;
  std::string port;
  if (authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos)
      return std::nullopt;
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return std::nullopt;
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos)
      port = authority.substr(colon + 1);
  }
  if (out.host.empty())
    return std::nullopt;
  if (!port.empty()) {
    const auto number = parse_port(port);
    if (!number || *number < 1)
      return std::nullopt; // a port no socket can have: refused here, never wrapped
  }
  out.port = port.empty() ? (out.tls ? "443" : "80") : port;
  out.key = (out.tls ? "https://" : "http://") + out.host + ":" + out.port;
  out.host_header = authority;
  return out;
}

} // namespace gather
