// Splitting "host:port", as `listen` and cluster nodes are written.

#include "config_reader.hpp"
#include "gather/config/port.hpp"

#include <string>

namespace gather {

namespace {

using config_reader::is_alpha;
using config_reader::is_digit;

bool is_host_name_char(char c) {
  return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

/// A host name or IPv4 address, or an IPv6 address in brackets (returned without them).
std::optional<std::string> parse_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    const std::string_view address = host.substr(1, host.size() - 2);
    if (std::all_of(address.begin(), address.end(), is_ipv6_char))
      return std::string(address);
    return std::nullopt;
  }
  if (!host.empty() && std::all_of(host.begin(), host.end(), is_host_name_char))
    return std::string(host);
  return std::nullopt;
}

} // namespace

std::optional<int> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), is_digit))
    return std::nullopt;
  int port = 0;
  for (char c : text)
    port = port * 10 + (c - '0');
  if (port > 65535)
    return std::nullopt;
  return port;
}

std::optional<std::pair<std::string, int>> split_host_port(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  const std::optional<std::string> host = parse_host(text.substr(0, colon));
  const std::optional<int> port = parse_port(text.substr(colon + 1));
  if (!host || !port)
    return std::nullopt;
  return std::make_pair(*host, *port);
}

} // namespace gather
