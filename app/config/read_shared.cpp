// Reading the `shared` object (docs/shared.md): the Redis server several gateways share rate
// limits and cached answers through, and the keys that need it. Nothing here connects.

#include "config_reader.hpp"

#include "gather/config/port.hpp"

namespace gather::config_reader {

namespace {

constexpr std::string_view redis_scheme = "redis://";
const char* const redis_expected = "\"redis://host[:port][/db]\" (db a number from 0 to 65535)";

/// "redis://host[:port][/db]" into `out`; false when malformed.
bool parse_redis_url(std::string_view url, shared_config& out) {
  if (url.substr(0, redis_scheme.size()) != redis_scheme)
    return false;
  std::string_view rest = url.substr(redis_scheme.size());
  const std::size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    const auto number = parse_port(db); // digits only, at most 65535
    if (!number)
      return false;
    out.db = *number;
    rest = rest.substr(0, slash);
  }
  // Without a port (and not a bracketed IPv6 address ending the text): Redis's 6379.
  const std::size_t colon = rest.rfind(':');
  const bool has_port = colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos;
  const std::string with_port = has_port ? std::string(rest) : std::string(rest) + ":6379";
  const auto address = split_host_port(with_port);
  if (!address || address->second == 0)
    return false;
  out.host = address->first;
  out.port = address->second;
  return true;
}

void read_prefix(const object_reader& shared, std::string& out) {
  const std::string expected = "a string of 1 to 64 printable ASCII characters without spaces";
  const auto prefix = shared.read_string("prefix", expected);
  if (!prefix)
    return;
  const bool printable = std::all_of(prefix->begin(), prefix->end(),
                                     [](char c) { return c > ' ' && c < 127; });
  if (prefix->empty() || prefix->size() > 64 || !printable)
    shared.problem("prefix", "must be " + expected);
  else
    out = *prefix;
}

} // namespace

std::optional<shared_config> read_shared(const object_reader& top) {
  const auto shared = top.read_object("shared");
  if (!shared)
    return std::nullopt;
  shared->reject_unknown_keys({"redis", "password_file", "prefix", "timeout_ms", "sync_ms"});
  shared_config out;
  const std::size_t before = shared->problems().size();
  if (shared->require("redis", std::string("a string ") + redis_expected)) {
    if (const auto url = shared->read_string("redis", std::string("a string ") + redis_expected)) {
      if (parse_redis_url(*url, out))
        out.redis = *url;
      else
        shared->problem("redis", std::string("must be ") + redis_expected);
    }
  }
  if (shared->find("password_file")) {
    const auto name = shared->read_string("password_file", "a non-empty file name");
    if (name && name->empty())
      shared->problem("password_file", "must be a non-empty file name");
    else if (name)
      out.password_file = *name;
  }
  read_prefix(*shared, out.prefix);
  shared->read_millis("timeout_ms", 1, 1000, out.timeout);
  shared->read_millis("sync_ms", 0, 1000, out.sync);
  if (shared->problems().size() != before)
    return std::nullopt;
  return out;
}

void check_shared_users(const config& cfg, bool shared_written, problem_list& problems) {
  if (shared_written)
    return;
  const std::string needs = "needs the top-level \"shared\" (the store to share through)";
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    const std::string route = element_path("routes", i);
    const auto& limit = cfg.routes[i].rate_limit;
    if (limit && limit->shared)
      problems.add(member_path(member_path(route, "rate_limit"), "shared"), needs);
    for (std::size_t j = 0; j < cfg.routes[i].sections.size(); ++j)
      if (cfg.routes[i].sections[j].cache_shared)
        problems.add(member_path(element_path(member_path(route, "sections"), j), "cache_shared"),
                     needs);
  }
}

} // namespace gather::config_reader
