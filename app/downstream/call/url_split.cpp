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


/// The URL's origin into `o` and its target into `target`; false when split_url would refuse it.
bool split_into(std::string_view url, origin_fields& o, std::string& target) {
  std::size_t at;
  if (url.substr(0, 7) == "http://") {
    at = 7;
  } else if (url.substr(0, 8) == "https://") {
    o.tls = true;
    at = 8;
  } else {
    return false;
  }
  std::size_t slash = at;
  while (slash < url.size() && url[slash] != '/' && url[slash] != '?')
    ++slash;
  const std::string_view authority = url.substr(at, slash - at);
  if (authority.empty() || authority.find('@') != std::string_view::npos)
    return false;
  std::string_view host, port;
  if (authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      return false;
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return false;
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
  }
  if (host.empty())
    return false;
  if (!port.empty()) {
    const auto number = parse_port(port);
    if (!number || *number < 1)
      return false; // a port no socket can have: refused here, never wrapped
  } else {
    port = o.tls ? "443" : "80";
  }
  set_target(target, url.substr(slash));
  o.host.assign(host.data(), host.size());
  o.port.assign(port.data(), port.size());
  // The key written in place at its final size, not a character appended at a time (a capacity
  // test each): 1,383 -> 1,223 instructions a split (bench/callgrind.sh 4 200).
  o.key.resize(at + host.size() + 1 + port.size());
  char* key = o.key.data();
  url.copy(key, at);
  key += at;
  for (const char c : host) // host names compare in any case: one key for every pool of an origin
    *key++ = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  *key++ = ':';
  port.copy(key, port.size());
  o.host_header.assign(authority.data(), authority.size());
  return true;
}

} // namespace

// A URL split whole (one with a placeholder in its origin, or made elsewhere than from a template):
// it reads the URL as views and builds only the strings it returns (a scan per part and a temporary
// authority cost ~1.8k instructions a call; bench/mallocs.sh).
std::optional<origin_and_target> split_url(const std::string& text) {
  auto o = std::make_shared<origin_fields>();
  std::optional<origin_and_target> out{std::in_place};
  if (!split_into(text, *o, out->target))
    return std::nullopt;
  out->origin = std::move(o);
  return out;
}

std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target) {
  if (!target)
    return split_url(url);
  auto o = std::make_shared<origin_fields>();
  std::optional<origin_and_target> out{std::in_place};
  if (!split_into(url, *o, out->target))
    return std::nullopt;
  o->host = target->address;
  o->port = std::to_string(target->port);
  o->key = (o->tls ? "https://" : "http://") + target->pool_key;
  o->host_header = target->authority;
  o->tls_name = target->server_name;
  o->endpoint = target;
  out->origin = std::move(o);
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
  out->origin = std::move(where->origin);
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
  out->origin = origin->origin;
  return out;
}

} // namespace gather
