#include "gather/downstream/call/url_split.hpp"

#include "gather/config/port.hpp"

#include <string_view>

namespace gather {

namespace {

/// A request target from the URL's text after its authority: "/" when empty, "/?q" for "?q".
void set_target(std::string& out, std::string_view path) {
  if (path.empty()) {
    out.assign(1, '/');
  } else if (path[0] == '?') {
    out.resize(path.size() + 1);
    out[0] = '/';
    path.copy(out.data() + 1, path.size());
  } else {
    out.assign(path.data(), path.size());
  }
}

} // namespace

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
  set_target(out.target, url.substr(slash));
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

std::shared_ptr<const split_origin> split_template_origin(std::string_view source) {
  const std::size_t scheme = source.substr(0, 7) == "http://" ? 7 : source.substr(0, 8) == "https://" ? 8 : 0;
  if (scheme == 0)
    return nullptr;
  const std::string_view prefix = source.substr(0, source.find_first_of("/?", scheme));
  if (prefix.find_first_of("{}", scheme) != std::string_view::npos)
    return nullptr; // a placeholder in the origin: split per call
  auto where = split_url(std::string(prefix));
  if (!where)
    return nullptr;
  auto out = std::make_shared<split_origin>();
  out->prefix.assign(prefix.data(), prefix.size());
  out->where = std::move(*where);
  out->where.target.clear();
  return out;
}

std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target,
                                           const split_origin* origin) {
  // The prefix compared, not trusted: a URL made elsewhere than from the template is split whole.
  if (!origin || target || url.compare(0, origin->prefix.size(), origin->prefix) != 0)
    return split_url(url, target);
  const std::string_view rest = std::string_view{url}.substr(origin->prefix.size());
  if (!rest.empty() && rest[0] != '/' && rest[0] != '?')
    return split_url(url, target); // the authority goes on past the prefix
  std::optional<origin_and_target> out{std::in_place};
  set_target(out->target, rest);
  const auto& where = origin->where;
  out->tls = where.tls;
  out->host = where.host;
  out->port = where.port;
  out->key = where.key;
  out->host_header = where.host_header;
  out->tls_name = where.tls_name;
  return out;
}

} // namespace gather
