#include "gather/downstream/call/url_split.hpp"

#include "gather/config/port.hpp"

#include <string_view>

namespace gather {

// Once per downstream call, so it reads the URL as views and builds only the strings it returns
// (a scan per part and a temporary authority cost ~1.8k instructions a call; bench/mallocs.sh).
std::optional<origin_and_target> split_url(const std::string& text) {
  const std::string_view url{text};
  origin_and_target out;
  std::size_t at;
  if (url.substr(0, 7) == "http://") {
    at = 7;
  } else if (url.substr(0, 8) == "https://") {
    out.tls = true;
    at = 8;
  } else {
    return std::nullopt;
  }
  std::size_t slash = at;
  while (slash < url.size() && url[slash] != '/' && url[slash] != '?')
    ++slash;
  const std::string_view authority = url.substr(at, slash - at);
  if (authority.empty() || authority.find('@') != std::string_view::npos)
    return std::nullopt;
  std::string_view host, port;
  if (authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return std::nullopt;
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
  }
  if (host.empty())
    return std::nullopt;
  if (!port.empty()) {
    const auto number = parse_port(port);
    if (!number || *number < 1)
      return std::nullopt; // a port no socket can have: refused here, never wrapped
  } else {
    port = out.tls ? "443" : "80";
  }
  const std::string_view path = url.substr(slash);
  if (path.empty()) {
    out.target.assign(1, '/');
  } else if (path[0] == '?') {
    out.target.resize(path.size() + 1);
    out.target[0] = '/';
    path.copy(out.target.data() + 1, path.size());
  } else {
    out.target.assign(path.data(), path.size());
  }
  out.host.assign(host.data(), host.size());
  out.port.assign(port.data(), port.size());
  // The key written in place at its final size, not a character appended at a time (a capacity
  // test each): 1,383 -> 1,223 instructions a split (bench/callgrind.sh 4 200).
  out.key.resize(at + host.size() + 1 + port.size());
  char* key = out.key.data();
  url.copy(key, at);
  key += at;
  for (const char c : host) // host names compare in any case: one key for every pool of an origin
    *key++ = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  *key++ = ':';
  port.copy(key, port.size());
  out.host_header.assign(authority.data(), authority.size());
  return out;
}

std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target) {
  auto out = split_url(url);
  if (!out || !target)
    return out;
  out->host = target->address;
  out->port = std::to_string(target->port);
  out->key = (out->tls ? "https://" : "http://") + target->pool_key;
  out->host_header = target->authority;
  out->tls_name = target->server_name;
  out->endpoint = target;
  return out;
}

} // namespace gather
