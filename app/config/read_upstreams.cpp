// Reading `upstreams` (docs/upstreams.md): each upstream's one source of endpoints, its balancer,
// outlier, health, tls and connection bounds; then every URL and gRPC target that names one. No
// name is ever looked up here: `gather check` runs without a network.

#include "config_reader.hpp"
#include "gather/config/port.hpp"

#include <cstdio>

#include <boost/asio/ip/address.hpp>

namespace gather::config_reader {

namespace {

constexpr std::size_t max_upstream_endpoints = 1000;

bool is_upstream_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z')
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-'; });
}

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

const std::string host_port_text = "\"host:port\" with a port from 1 to 65535";

/// "host:port" with a port of 1..65535; problems under `path`.
std::optional<std::pair<std::string, int>> read_host_port(const json& value, const std::string& path,
                                                          problem_list& problems) {
  if (!value.is_string()) {
    problems.add(path, "must be a string " + host_port_text);
    return std::nullopt;
  }
  auto split = split_host_port(value.get_ref<const std::string&>());
  if (!split || split->second < 1) {
    problems.add(path, "must be " + host_port_text);
    return std::nullopt;
  }
  return split;
}

void read_endpoint_list(const object_reader& up, upstream_config& out) {
  const json& list = *up.find("endpoints");
  const auto path = up.path_of("endpoints");
  if (!list.is_array() || list.empty() || list.size() > max_upstream_endpoints) {
    up.problem("endpoints", "must be an array of 1 to 1000 entries, each \"host:port\" or "
                            "{\"address\": \"host:port\", \"weight\": W}");
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto at = element_path(path, i);
    const json& entry = list[i];
    upstream_entry e;
    const json* address = &entry;
    if (entry.is_object()) {
      const object_reader object(entry, at, up.problems());
      object.reject_unknown_keys({"address", "weight"});
      if (!object.require("address", "a string " + host_port_text))
        continue;
      address = object.find("address");
      object.read_integer("weight", 1, 100, e.weight);
      if (auto split = read_host_port(*address, object.path_of("address"), up.problems())) {
        e.host = split->first;
        e.port = split->second;
        out.endpoints.push_back(std::move(e));
      }
      continue;
    }
    if (auto split = read_host_port(*address, at, up.problems())) {
      e.host = split->first;
      e.port = split->second;
      out.endpoints.push_back(std::move(e));
    }
  }
}

bool read_source(const object_reader& up, upstream_config& out) {
  const bool endpoints = up.find("endpoints"), dns = up.find("dns"), srv = up.find("srv");
  if (int(endpoints) + int(dns) + int(srv) != 1) {
    up.problems().add(up.path(), "must have exactly one of \"endpoints\", \"dns\" and \"srv\"");
    return false;
  }
  if (endpoints) {
    out.source = upstream_config::source_kind::endpoints;
    read_endpoint_list(up, out);
  } else if (dns) {
    out.source = upstream_config::source_kind::dns;
    if (auto split = read_host_port(*up.find("dns"), up.path_of("dns"), up.problems())) {
      out.dns_name = split->first;
      out.dns_port = split->second;
    }
  } else {
    out.source = upstream_config::source_kind::srv;
    const auto name = up.read_string("srv", "a DNS SRV name (\"_grpc._tcp.service.example\")");
    if (name && (name->empty() || name->size() > 253 || name->find_first_of(" :/") != std::string::npos))
      up.problem("srv", "must be a DNS SRV name (\"_grpc._tcp.service.example\")");
    else if (name)
      out.srv_name = *name;
  }
  return true;
}

void read_outlier(const object_reader& up, upstream_outlier_config& out) {
  const auto outlier = up.read_object("outlier");
  if (!outlier)
    return;
  outlier->reject_unknown_keys({"consecutive_failures", "eject_ms", "max_ejected_percent"});
  outlier->read_integer("consecutive_failures", 1, 1000, out.consecutive_failures);
  outlier->read_millis("eject_ms", 1, 3600000, out.eject);
  outlier->read_integer("max_ejected_percent", 0, 100, out.max_ejected_percent);
}

std::optional<upstream_health_config> read_health(const object_reader& up) {
  const auto health = up.read_object("health");
  if (!health)
    return std::nullopt;
  health->reject_unknown_keys({"path", "grpc_service", "interval_ms", "timeout_ms", "unhealthy", "healthy"});
  upstream_health_config out;
  const bool path = health->find("path"), grpc = health->find("grpc_service");
  if (path == grpc)
    health->problems().add(health->path(), "must have exactly one of \"path\" and \"grpc_service\"");
  if (path) {
    const auto text = health->read_string("path", "a path beginning with /");
    if (text && (text->empty() || (*text)[0] != '/'))
      health->problem("path", "must be a path beginning with /");
    else if (text)
      out.path = *text;
  }
  if (grpc)
    if (auto text = health->read_string("grpc_service", "a string: a service name, \"\" for the whole server"))
      out.grpc_service = *text;
  health->read_millis("interval_ms", 100, 3600000, out.interval);
  health->read_millis("timeout_ms", 1, max_timeout_ms, out.timeout);
  health->read_integer("unhealthy", 1, 1000, out.unhealthy);
  health->read_integer("healthy", 1, 1000, out.healthy);
  return out;
}

/// A file named by `tls` that cannot be opened is a problem now, not at the first call.
void check_readable(const object_reader& tls, std::string_view key, const std::string& file) {
  if (file.empty())
    return;
  if (std::FILE* f = std::fopen(file.c_str(), "rb"))
    std::fclose(f);
  else
    tls.problem(key, "cannot read " + in_quotes(file));
}

std::optional<upstream_tls_config> read_upstream_tls(const object_reader& up, const upstream_config& source) {
  const auto tls = up.read_object("tls");
  if (!tls)
    return std::nullopt;
  tls->reject_unknown_keys({"ca_file", "cert_file", "key_file", "server_name"});
  upstream_tls_config out;
  const std::pair<const char*, std::string*> files[] = {
      {"ca_file", &out.ca_file}, {"cert_file", &out.cert_file}, {"key_file", &out.key_file}};
  for (auto [key, file] : files) {
    if (!tls->find(key))
      continue;
    if (auto name = tls->read_string(key, "a non-empty file name"); name && !name->empty())
      *file = *name;
    else if (name)
      tls->problem(key, "must be a non-empty file name");
    check_readable(*tls, key, *file);
  }
  if (tls->find("cert_file") && !tls->find("key_file"))
    tls->problem("cert_file", "needs key_file (a client certificate and its key: both or neither)");
  if (tls->find("key_file") && !tls->find("cert_file"))
    tls->problem("key_file", "needs cert_file (a client certificate and its key: both or neither)");
  if (auto name = tls->read_string("server_name", "a host name"))
    out.server_name = *name;
  const bool literal = std::any_of(source.endpoints.begin(), source.endpoints.end(),
                                   [](const upstream_entry& e) { return is_ip_literal(e.host); });
  if (out.server_name.empty() && !tls->find("server_name") && literal)
    tls->problems().add(tls->path_of("server_name"),
                        "is required when an endpoint is an IP literal (the name its certificate must carry)");
  return out;
}

upstream_config read_upstream(const object_reader& up, std::string name) {
  upstream_config out;
  out.name = std::move(name);
  up.reject_unknown_keys({"endpoints", "dns", "srv", "refresh_ms", "balance", "outlier", "health", "tls",
                          "idle_timeout_ms", "max_connection_age_ms", "max_endpoints"});
  read_source(up, out);
  up.read_millis("refresh_ms", 1000, 3600000, out.refresh);
  up.read_integer("max_endpoints", 1, 10000, out.max_endpoints);
  if (const auto balance = up.read_string("balance", "\"least_request\" or \"round_robin\"")) {
    if (*balance == "round_robin")
      out.balance = balance_kind::round_robin;
    else if (*balance != "least_request")
      up.problem("balance", "must be \"least_request\" or \"round_robin\"");
  }
  read_outlier(up, out.outlier);
  out.health = read_health(up);
  out.tls = read_upstream_tls(up, out);
  up.read_millis("idle_timeout_ms", 0, 3600000, out.idle_timeout);
  up.read_millis("max_connection_age_ms", 0, 86400000, out.max_connection_age);
  return out;
}

/// A URL or target that names an upstream may not carry a port: the endpoints have theirs. A
/// gRPC target without a port must name one (read_grpc.cpp let it through for this check).
void check_named(const config& cfg, const std::string& url, const std::string& path, problem_list& problems,
                 bool grpc = false) {
  if (url.empty())
    return; // reported already
  const auto part = url_host(url);
  const bool upstream = cfg.upstream_of("http://" + part.host + "/") != nullptr;
  if (part.has_port && upstream)
    problems.add(path, "names the upstream " + in_quotes(part.host) +
                           ": no port here (its endpoints carry theirs)");
  else if (grpc && !part.has_port && !upstream)
    problems.add(path, "must name its port (\"http://host:port\" or \"https://host:port\")");
}

} // namespace

std::vector<upstream_config> read_upstreams(const object_reader& top) {
  std::vector<upstream_config> out;
  const json* value = top.find("upstreams");
  if (!value)
    return out;
  if (!value->is_object()) {
    top.problem("upstreams", "must be an object: upstream name -> upstream");
    return out;
  }
  for (const auto& [name, body] : value->items()) {
    const auto path = top.path_of("upstreams") + "." + name;
    if (!is_upstream_name(name)) {
      top.problems().add(path, "an upstream's name must match [a-z][a-z0-9-]* (at most 63 characters)");
      continue;
    }
    if (!body.is_object()) {
      top.problems().add(path, "must be an object");
      continue;
    }
    out.push_back(read_upstream(object_reader(body, path, top.problems()), name));
  }
  return out; // nlohmann's object: already sorted by name
}

void check_upstream_users(const config& cfg, problem_list& problems) {
  for (std::size_t r = 0; r < cfg.routes.size(); ++r) {
    const auto& route = cfg.routes[r];
    const auto route_path = "routes[" + std::to_string(r) + "]";
    for (std::size_t s = 0; s < route.sections.size(); ++s) {
      const auto& section = route.sections[s];
      auto path = section.write ? route_path + ".write" : route_path + ".sections[" + std::to_string(s) + "]";
      if (section.grpc)
        check_named(cfg, section.grpc->target, path + ".grpc.target", problems, true);
      else
        check_named(cfg, section.url.source, path + ".url", problems);
    }
    if (route.batch) {
      if (route.batch->grpc)
        check_named(cfg, route.batch->grpc->target, route_path + ".batch.grpc.target", problems, true);
      else
        check_named(cfg, route.batch->url.source, route_path + ".batch.url", problems);
    }
  }
}

} // namespace gather::config_reader

namespace gather {

bool upstream_config::literal_only() const {
  return source == source_kind::endpoints &&
         std::all_of(endpoints.begin(), endpoints.end(),
                     [](const upstream_entry& e) { return config_reader::is_ip_literal(e.host); });
}

url_host_part url_host(std::string_view url) {
  url_host_part out;
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos)
    return out;
  const auto start = scheme + 3;
  const auto end = url.find_first_of("/?#", start);
  auto authority = url.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  if (authority.find_first_of("{}@[") != std::string_view::npos)
    return out;
  const auto colon = authority.find(':');
  out.has_port = colon != std::string_view::npos;
  out.host = config_reader::lower_case(authority.substr(0, colon));
  return out;
}

const upstream_config* config::upstream_of(std::string_view url) const {
  if (upstreams.empty())
    return nullptr;
  const auto part = url_host(url);
  if (part.host.empty())
    return nullptr;
  auto it = std::lower_bound(upstreams.begin(), upstreams.end(), part.host,
                             [](const upstream_config& u, const std::string& name) { return u.name < name; });
  return it != upstreams.end() && it->name == part.host ? &*it : nullptr;
}

} // namespace gather
