// Reading what a gateway behind a load balancer needs (docs/gateway.md, "Behind a load
// balancer"): `trusted_proxies`, `listen_proxy_protocol` and `drain_delay_ms`.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

ip_ranges read_trusted_proxies(const object_reader& top) {
  ip_ranges out;
  const json* value = top.find("trusted_proxies");
  if (!value)
    return out;
  if (!value->is_array()) {
    top.problem("trusted_proxies", "must be an array of CIDR ranges (\"10.0.0.0/8\", \"::1/128\")");
    return out;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& entry = (*value)[i];
    const auto path = element_path(top.path_of("trusted_proxies"), i);
    if (!entry.is_string()) {
      top.problems().add(path, "must be a string: a CIDR range (\"10.0.0.0/8\", \"::1/128\")");
      continue;
    }
    auto parsed = parse_cidr(entry.get_ref<const std::string&>());
    if (parsed.range)
      out.ranges.push_back(*parsed.range);
    else
      top.problems().add(path, parsed.problem);
  }
  return out;
}

} // namespace

void read_load_balancer(const object_reader& top, config& out) {
  out.trusted_proxies = read_trusted_proxies(top);
  top.read_bool("listen_proxy_protocol", out.listen_proxy_protocol);
  top.read_millis("drain_delay_ms", 0, max_timeout_ms, out.drain_delay);
  const json* trusted = top.find("trusted_proxies");
  // Without a trusted peer every connection would be closed: the file says something else.
  if (out.listen_proxy_protocol && (!trusted || (trusted->is_array() && trusted->empty())))
    top.problem("listen_proxy_protocol",
                "needs trusted_proxies: the balancers whose PROXY headers are believed (any other "
                "peer's connection is closed)");
}

} // namespace gather::config_reader
