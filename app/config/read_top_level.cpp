// Reading the document's top-level keys: listen, threads, inbound limits, http2, tls and the sizes.

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

void read_http2(const object_reader& top, http2_limits& out) {
  const auto http2 = top.read_object("http2");
  if (!http2)
    return;
  http2->reject_unknown_keys({"max_concurrent_streams", "max_header_list_bytes",
                              "initial_window_bytes", "max_resets_per_second",
                              "max_control_frames_per_second", "max_continuation_frames",
                              "max_stream_buffer_bytes"});
  http2->read_integer("max_concurrent_streams", 1, 10000, out.max_concurrent_streams);
  http2->read_integer("max_header_list_bytes", 256, 1048576, out.max_header_list_bytes);
  // RFC 9113 6.5.2: a window is at most 2^31-1 octets.
  http2->read_integer("initial_window_bytes", 1, 2147483647, out.initial_window_bytes);
  http2->read_integer("max_resets_per_second", 1, 100000, out.max_resets_per_second);
  http2->read_integer("max_control_frames_per_second", 1, 100000, out.max_control_frames_per_second);
  http2->read_integer("max_continuation_frames", 0, 1000, out.max_continuation_frames);
  http2->read_integer("max_stream_buffer_bytes", 1024, max_size_bytes, out.max_stream_buffer_bytes);
}

std::optional<tls_config> read_tls(const object_reader& top) {
  std::optional<tls_config> out;
  if (const auto tls = top.read_object("tls")) {
    tls->reject_unknown_keys({"cert_file", "key_file"});
    out.emplace();
    read_file_names(*tls, {{"cert_file", &out->cert_file}, {"key_file", &out->key_file}});
  }
  return out;
}

std::optional<admin_config> read_admin(const object_reader& top, const std::string& listen) {
  std::optional<admin_config> out;
  if (const auto admin = top.read_object("admin")) {
    admin->reject_unknown_keys({"listen"});
    const std::string expected = "\"host:port\" with a port from 0 to 65535";
    if (!admin->require("listen", "a string " + expected))
      return out;
    const auto at = admin->read_string("listen", "a string " + expected);
    const auto address = at ? split_host_port(*at) : std::nullopt;
    if (at && !address)
      admin->problem("listen", "must be " + expected);
    else if (address && address->second != 0 && split_host_port(listen) == address)
      admin->problem("listen", "must differ from the top-level listen (" + listen + ")");
    else if (address)
      out.emplace(admin_config{*at});
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
       "keep_alive_idle_ms", "http2", "tls", "tracing", "admin", "$schema", "retry_budget",
       "deadline_header", "cors", "compression", "protos", "shared",
       "trusted_proxies", "listen_proxy_protocol", "drain_delay_ms", "downstream_idle_timeout_ms",
       "downstream_drain_quiet_ms", "downstream_alpn_memory_ms", "downstream_max_idle_connections",
       "upstreams"});
  read_listen(top, out.listen);
  top.read_integer("io_threads", 1, 64, out.io_threads);
  read_inbound_limits(top, out.inbound);
  read_http2(top, out.http2);
  out.tls = read_tls(top);
  top.read_integer("max_inflight", 1, 1000000, out.max_inflight);
  top.read_integer("max_body_bytes", 1, max_size_bytes, out.max_body_bytes);
  top.read_integer("max_response_bytes", 1, max_size_bytes, out.max_response_bytes);
  top.read_integer("cache_max_entries", 1, 100000000, out.cache_max_entries);
  top.read_integer("cache_max_bytes", 1024, 68719476736, out.cache_max_bytes);
  top.read_millis("downstream_idle_timeout_ms", 0, 3600000, out.downstream_idle_timeout);
  top.read_millis("downstream_drain_quiet_ms", 1, 600000, out.downstream_drain_quiet);
  top.read_millis("downstream_alpn_memory_ms", 0, 86400000, out.downstream_alpn_memory);
  top.read_integer("downstream_max_idle_connections", 0, 1000000, out.downstream_max_idle_connections);
  out.routes = read_routes(top);
  out.cluster = read_cluster(top);
  out.admin = read_admin(top, out.listen);
  // Without `admin` the operations paths take precedence on `listen`: a route there is dead.
  const json* routes = document.contains("routes") ? &document["routes"] : nullptr;
  for (std::size_t i = 0; !out.admin && routes && routes->is_array() && i < routes->size(); ++i) {
    const json& route = (*routes)[i];
    if (!route.is_object() || !route.contains("path") || !route["path"].is_string())
      continue;
    const auto& path = route["path"].get_ref<const std::string&>();
    if (path != "/healthz" && path != "/readyz" && is_builtin_path(path))
      problems.add("routes[" + std::to_string(i) + "].path",
                   in_quotes(path) + " is a built-in endpoint, which takes precedence over routes "
                                     "(unless admin.listen moves it to its own listener)");
  }
  read_retry_budget(top, out.retry_budget);
  read_deadline_header(top, out.deadline_header);
  out.tracing = read_tracing(top);
  out.cors = read_cors(top);
  out.compression = read_compression(top);
  read_protos(top, out.protos);
  out.shared = read_shared(top);
  check_shared_users(out, top.find("shared") != nullptr, problems);
  read_load_balancer(top, out);
  out.upstreams = read_upstreams(top);
  check_upstream_users(out, problems);
  return out;
}

} // namespace gather::config_reader
