// Reading the `cluster` object: the other nodes, whether this one serves requests itself, and
// the links' TLS and connect timeout.

#include "config_reader.hpp"

#include <set>

namespace gather::config_reader {

namespace {

std::vector<std::string> read_nodes(const object_reader& cluster) {
  std::vector<std::string> nodes;
  const json* value = cluster.find("nodes");
  if (!value)
    return nodes;
  if (!value->is_array()) {
    cluster.problem("nodes", "must be an array of \"host:port\" strings");
    return nodes;
  }
  std::set<std::pair<std::string, int>> seen;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& node = (*value)[i];
    const std::string path = element_path(cluster.path_of("nodes"), i);
    const auto address =
        node.is_string() ? split_host_port(node.get_ref<const std::string&>()) : std::nullopt;
    if (!address || address->second == 0)
      cluster.problems().add(path, "must be \"host:port\" with a port from 1 to 65535");
    else if (!seen.insert(*address).second)
      cluster.problems().add(path,
                             "duplicate node " + in_quotes(node.get_ref<const std::string&>()));
    else
      nodes.push_back(node.get<std::string>());
  }
  return nodes;
}

} // namespace

std::optional<cluster_config> read_cluster(const object_reader& top) {
  std::optional<cluster_config> out;
  if (const auto cluster = top.read_object("cluster")) {
    cluster->reject_unknown_keys({"nodes", "local", "tls", "connect_timeout_ms"});
    out.emplace();
    out->nodes = read_nodes(*cluster);
    cluster->read_bool("local", out->local);
    cluster->read_millis("connect_timeout_ms", 1, 600000, out->connect_timeout);
    if (const auto tls = cluster->read_object("tls")) {
      tls->reject_unknown_keys({"cert_file", "key_file", "ca_file"});
      out->tls.emplace();
      read_file_names(*tls, {{"cert_file", &out->tls->cert_file},
                             {"key_file", &out->tls->key_file},
                             {"ca_file", &out->tls->ca_file}});
    }
  }
  return out;
}

} // namespace gather::config_reader
