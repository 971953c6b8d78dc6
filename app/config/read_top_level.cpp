// Reading the document's top-level keys: listen, threads, inbound limits, tls and the sizes.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

constexpr long long max_size_bytes = 1073741824;

void read_listen(const object_reader& top, std::string& out) {
  const std::string expected = "\"host:port\" with a port from 0 to 65535";
  const std::optional<std::string> listen = top.read_string("listen", "a string " + expected);
  if (!listen)
    return;
  if (split_host_port(*listen))
    out = *listen;
  else
    top.problem("listen", "must be " + expected);
}

void read_inbound_limits(const object_reader& top, inbound_limits& out) {
  top.read_integer("max_connections", 1, 1000000, out.max_connections);
  top.read_integer("max_request_line_bytes", 64, 1048576, out.max_request_line_bytes);
  top.read_integer("max_header_bytes", 256, 1048576, out.max_header_bytes);
  top.read_integer("max_headers", 1, 10000, out.max_headers);
  top.read_millis("request_timeout_ms", 1, 3600000, out.request_timeout);
  top.read_millis("keep_alive_idle_ms", 1, 3600000, out.keep_alive_idle);
}

std::optional<tls_config> read_tls(const object_reader& top) {
  std::optional<tls_config> out;
  if (const auto tls = top.read_object("tls")) {
    tls->reject_unknown_keys({"cert_file", "key_file"});
    out.emplace();
    for (auto [key, file] :
         {std::pair{"cert_file", &out->cert_file}, {"key_file", &out->key_file}}) {
      if (!tls->require(key, "a file name"))
        continue;
      if (auto name = tls->read_string(key, "a non-empty file name"); name && !name->empty())
        *file = *name;
      else if (name)
        tls->problem(key, "must be a non-empty file name");
    }
  }
  return out;
}

} // namespace

config read_config(const json& document, problem_list& problems) {
  config out;
  if (!document.is_object()) {
    problems.add(root_path, "must be a JSON object");
    return out;
  }
  const object_reader top(document, "", problems);
  top.reject_unknown_keys(
      {"listen", "max_inflight", "max_body_bytes", "max_response_bytes", "cache_max_entries",
       "cache_max_bytes", "routes", "cluster", "io_threads", "max_connections",
       "max_request_line_bytes", "max_header_bytes", "max_headers", "request_timeout_ms",
       "keep_alive_idle_ms", "tls", "tracing", "$schema", "retry_budget", "deadline_header"});
  read_listen(top, out.listen);
  top.read_integer("io_threads", 1, 64, out.io_threads);
  read_inbound_limits(top, out.inbound);
  out.tls = read_tls(top);
  top.read_integer("max_inflight", 1, 1000000, out.max_inflight);
  top.read_integer("max_body_bytes", 1, max_size_bytes, out.max_body_bytes);
  top.read_integer("max_response_bytes", 1, max_size_bytes, out.max_response_bytes);
  top.read_integer("cache_max_entries", 1, 100000000, out.cache_max_entries);
  top.read_integer("cache_max_bytes", 1024, 68719476736, out.cache_max_bytes);
  out.routes = read_routes(top);
  out.cluster = read_cluster(top);
  read_retry_budget(top, out.retry_budget);
  read_deadline_header(top, out.deadline_header);
  out.tracing = read_tracing(top);
  return out;
}

} // namespace gather::config_reader
