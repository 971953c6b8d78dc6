// Top-level keys: limits, listen, cluster, the front's keys and the downstream pools' bounds.
#include <catch2/catch.hpp>

#include "gather/config/config.hpp"
#include "config/config_test_support.hpp"

using gather::config_result;
using gather::load_config;
using gather::millis;
using gather::url_part;
using json = nlohmann::json;
using namespace gather::test::config_support;

TEST_CASE("top-level limits have ranges", "[unit][config]") {
  const auto with_top = [](const std::string& key, json value) {
    json document = minimal();
    document[key] = std::move(value);
    return document;
  };
  require_problem(with_top("max_inflight", 0),
                  "max_inflight: must be an integer from 1 to 1000000");
  require_problem(with_top("max_inflight", 1000001),
                  "max_inflight: must be an integer from 1 to 1000000");
  require_problem(with_top("max_body_bytes", 0),
                  "max_body_bytes: must be an integer from 1 to 1073741824");
  require_problem(with_top("max_response_bytes", 1073741825),
                  "max_response_bytes: must be an integer from 1 to 1073741824");
  CHECK(require_valid(with_top("max_inflight", 1000000)).max_inflight == 1000000);
  CHECK(require_valid(with_top("max_body_bytes", 1)).max_body_bytes == 1);
}

TEST_CASE("listen is host:port with a port from 0 to 65535", "[unit][config]") {
  const auto with_listen = [](json value) {
    json document = minimal();
    document["listen"] = std::move(value);
    return document;
  };
  require_problem(with_listen("localhost"), "listen: must be");
  require_problem(with_listen("localhost:65536"), "listen: must be");
  require_problem(with_listen(":8080"), "listen: must be");
  require_problem(with_listen("a b:80"), "listen: must be");
  require_problem(with_listen(8080), "listen: must be");
  CHECK(require_valid(with_listen("0.0.0.0:0")).listen == "0.0.0.0:0");
  CHECK(require_valid(with_listen("[::1]:9000")).listen == "[::1]:9000");
}

TEST_CASE("split_host_port accepts host:port only", "[unit][config]") {
  using gather::split_host_port;
  CHECK(split_host_port("127.0.0.1:8080") == std::make_pair(std::string("127.0.0.1"), 8080));
  CHECK(split_host_port("example.com:0") == std::make_pair(std::string("example.com"), 0));
  CHECK(split_host_port("[::1]:65535") == std::make_pair(std::string("::1"), 65535));
  CHECK_FALSE(split_host_port("host"));
  CHECK_FALSE(split_host_port("host:"));
  CHECK_FALSE(split_host_port(":80"));
  CHECK_FALSE(split_host_port("host:65536"));
  CHECK_FALSE(split_host_port("host:-1"));
  CHECK_FALSE(split_host_port("host:8o"));
  CHECK_FALSE(split_host_port("::1:80"));
  CHECK_FALSE(split_host_port("h/x:80"));
}

TEST_CASE("cluster", "[unit][config]") {
  const auto with_cluster = [](json cluster) {
    json document = minimal();
    document["cluster"] = std::move(cluster);
    return document;
  };
  require_problem(with_cluster(json::array()), "cluster: must be an object");
  require_problem(with_cluster({{"nodes", "a:1"}}), "cluster.nodes: must be an array");
  require_problem(with_cluster({{"nodes", {"a:1", "nohost"}}}),
                  "cluster.nodes[1]: must be \"host:port\" with a port from 1 to 65535");
  require_problem(with_cluster({{"nodes", {"a:0"}}}),
                  "cluster.nodes[0]: must be \"host:port\" with a port from 1 to 65535");
  require_problem(with_cluster({{"nodes", {4242}}}), "cluster.nodes[0]: must be \"host:port\"");
  require_problem(with_cluster({{"nodes", {"a:1", "b:2", "a:01"}}}),
                  "cluster.nodes[2]: duplicate node \"a:01\"");

  const gather::config cfg = require_valid(
      with_cluster({{"nodes", {"127.0.0.1:4242", "127.0.0.1:4243"}}, {"local", false}}));
  REQUIRE(cfg.cluster.has_value());
  CHECK(cfg.cluster->nodes == std::vector<std::string>{"127.0.0.1:4242", "127.0.0.1:4243"});
  CHECK_FALSE(cfg.cluster->local);
  const gather::config defaults = require_valid(with_cluster(json::object()));
  CHECK(defaults.cluster->nodes.empty());
  CHECK(defaults.cluster->local);
}

// ---- config keys of the front (docs/config.md) -----------------------------------------------------------------

TEST_CASE("config: io_threads is an integer from 1 to 64", "[unit][front][config]") {
  const std::string io = "io_threads: must be an integer from 1 to 64";
  require_problem(with_top("io_threads", 0), io);
  require_problem(with_top("io_threads", 65), io);
  require_problem(with_top("io_threads", "x"), io);
  require_problem(with_top("io_threads", 2.5), io);
  CHECK(require_valid(with_top("io_threads", 64)).io_threads == 64);
  CHECK(require_valid(with_top("io_threads", 1)).io_threads == 1);
}

TEST_CASE("config: the inbound limits have ranges and defaults", "[unit][front][config]") {
  require_problem(with_top("max_connections", 0), "max_connections: must be an integer from 1 to 1000000");
  require_problem(with_top("max_connections", 1000001), "max_connections: must be an integer from 1 to 1000000");
  require_problem(with_top("max_request_line_bytes", 63), "max_request_line_bytes: must be an integer from 64");
  require_problem(with_top("max_header_bytes", 255), "max_header_bytes: must be an integer from 256");
  require_problem(with_top("max_headers", 0), "max_headers: must be an integer from 1");
  require_problem(with_top("request_timeout_ms", 0), "request_timeout_ms: must be an integer from 1");
  require_problem(with_top("keep_alive_idle_ms", 0), "keep_alive_idle_ms: must be an integer from 1");
  require_problem(with_top("keep_alive_idle_ms", "300"), "keep_alive_idle_ms: must be an integer from 1");

  const auto defaults = require_valid(minimal());
  CHECK(defaults.io_threads == 1);
  CHECK(defaults.inbound.max_connections == 10000);
  CHECK(defaults.inbound.max_request_line_bytes == 8192);
  CHECK(defaults.inbound.max_header_bytes == 16384);
  CHECK(defaults.inbound.max_headers == 100);
  CHECK(defaults.inbound.request_timeout == std::chrono::milliseconds{10000});
  CHECK(defaults.inbound.keep_alive_idle == std::chrono::milliseconds{60000});
  CHECK_FALSE(defaults.tls.has_value());

  json set = minimal();
  set["max_connections"] = 5;
  set["keep_alive_idle_ms"] = 300;
  set["request_timeout_ms"] = 1500;
  const auto cfg = require_valid(set);
  CHECK(cfg.inbound.max_connections == 5);
  CHECK(cfg.inbound.keep_alive_idle == std::chrono::milliseconds{300});
  CHECK(cfg.inbound.request_timeout == std::chrono::milliseconds{1500});
}

TEST_CASE("config: http2 limits have ranges and defaults, by JSON path", "[unit][front][config][h2]") {
  require_problem(with_top("http2", {{"max_concurrent_streams", 0}}),
                  "http2.max_concurrent_streams: must be an integer from 1 to 10000");
  require_problem(with_top("http2", {{"max_header_list_bytes", 100}}),
                  "http2.max_header_list_bytes: must be an integer from 256");
  require_problem(with_top("http2", {{"initial_window_bytes", 2147483648LL}}),
                  "http2.initial_window_bytes: must be an integer from 1 to 2147483647");
  require_problem(with_top("http2", {{"max_resets_per_second", "100"}}),
                  "http2.max_resets_per_second: must be an integer from 1");
  require_problem(with_top("http2", {{"max_pings", 3}}), "http2.max_pings: unknown key");
  require_problem(with_top("http2", 5), "http2: must be an object");

  const auto defaults = require_valid(minimal()).http2;
  CHECK(defaults.max_concurrent_streams == 100);
  CHECK(defaults.max_header_list_bytes == 32768);
  CHECK(defaults.initial_window_bytes == 65535);
  CHECK(defaults.max_resets_per_second == 100);
  CHECK(defaults.max_control_frames_per_second == 100);
  CHECK(defaults.max_continuation_frames == 8);
  CHECK(defaults.max_stream_buffer_bytes == 1048576);
  require_problem(with_top("http2", {{"max_stream_buffer_bytes", 10}}), "http2.max_stream_buffer_bytes");
  const auto set = require_valid(with_top("http2", {{"max_concurrent_streams", 7}, {"max_continuation_frames", 0}})).http2;
  CHECK(set.max_concurrent_streams == 7);
  CHECK(set.max_continuation_frames == 0);
  CHECK(set.max_header_list_bytes == 32768);
}

TEST_CASE("config: tls needs both files and no other key", "[unit][front][config]") {
  require_problem(with_top("tls", {{"cert_file", "c.pem"}}), "tls.key_file: is required");
  require_problem(with_top("tls", {{"key_file", "k.pem"}}), "tls.cert_file: is required");
  require_problem(with_top("tls", {{"cert_file", "c.pem"}, {"key_file", "k.pem"}, {"ca_file", "x"}}),
                  "tls.ca_file: unknown key");
  require_problem(with_top("tls", {{"cert_file", ""}, {"key_file", "k.pem"}}),
                  "tls.cert_file: must be a non-empty file name");
  require_problem(with_top("tls", {{"cert_file", 1}, {"key_file", "k.pem"}}), "tls.cert_file:");
  require_problem(with_top("tls", "c.pem"), "tls:");
  // The files themselves are checked by gather check/serve (tls_problems), not by the parser.
  const auto cfg = require_valid(with_top("tls", {{"cert_file", "c.pem"}, {"key_file", "k.pem"}}));
  REQUIRE(cfg.tls.has_value());
  CHECK(cfg.tls->cert_file == "c.pem");
  CHECK(cfg.tls->key_file == "k.pem");
}

TEST_CASE("config: a $schema key is accepted and ignored", "[unit][front][config]") {
  const auto cfg = require_valid(with_top("$schema", "x"));
  CHECK(cfg.routes.size() == 1);
  require_problem(with_top("$schemas", "x"), "$schemas: unknown key");
}

// ---- the downstream pools' bounds (docs/config.md) ----------------------------------------------------------------

TEST_CASE("config: downstream_idle_timeout_ms, downstream_drain_quiet_ms, downstream_alpn_memory_ms and downstream_max_idle_connections have ranges and defaults",
          "[unit][downstream][config]") {
  const auto defaults = require_valid(with_top("io_threads", 1));
  CHECK(defaults.downstream_idle_timeout == std::chrono::milliseconds{60000});
  CHECK(defaults.downstream_drain_quiet == std::chrono::milliseconds{1000});
  CHECK(require_valid(with_top("downstream_idle_timeout_ms", 0)).downstream_idle_timeout.count() == 0); // never
  CHECK(require_valid(with_top("downstream_drain_quiet_ms", 250)).downstream_drain_quiet.count() == 250);
  require_problem(with_top("downstream_idle_timeout_ms", -1), "downstream_idle_timeout_ms: must be an integer from 0 to 3600000");
  require_problem(with_top("downstream_idle_timeout_ms", "60s"), "downstream_idle_timeout_ms: must be an integer from 0 to 3600000");
  require_problem(with_top("downstream_drain_quiet_ms", 0), "downstream_drain_quiet_ms: must be an integer from 1 to 600000");
  require_problem(with_top("downstream_drain_quiet_ms", 600001), "downstream_drain_quiet_ms: must be an integer from 1 to 600000");
  CHECK(defaults.downstream_alpn_memory == std::chrono::milliseconds{60000});
  CHECK(require_valid(with_top("downstream_alpn_memory_ms", 0)).downstream_alpn_memory.count() == 0); // ask every time
  require_problem(with_top("downstream_alpn_memory_ms", -1), "downstream_alpn_memory_ms: must be an integer from 0 to 86400000");
  require_problem(with_top("downstream_alpn_memory_ms", 86400001), "downstream_alpn_memory_ms: must be an integer from 0 to 86400000");
  CHECK(defaults.downstream_max_idle_connections == 1024);
  CHECK(require_valid(with_top("downstream_max_idle_connections", 0)).downstream_max_idle_connections == 0); // none kept
  require_problem(with_top("downstream_max_idle_connections", -1), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
  require_problem(with_top("downstream_max_idle_connections", 1000001), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
  require_problem(with_top("downstream_max_idle_connections", "many"), "downstream_max_idle_connections: must be an integer from 0 to 1000000");
}
