// The gateway's configuration (docs/config.md), as typed values.
//
// load_config() turns JSON text into a `config` or into the full list of problems, each naming its
// JSON path. Everything the runtime needs precomputed (parsed URL templates, dependency edges, the
// order in which sections resolve) is computed here once, so the request path never re-validates.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/grpc_config.hpp"
#include "gather/config/template_parts.hpp"
#include "gather/config/ip_range.hpp"
#include "gather/config/upstream_config.hpp"

namespace gather {

struct retry_policy {
  int attempts = 1; ///< counts the first try
  millis backoff{0};
  double multiplier = 2.0;
};

/// `hedge` (docs/resilience.md): when an attempt has not answered after the delay, one more identical call.
struct hedge_policy {
  std::optional<millis> after;       ///< a fixed delay, or
  std::optional<double> percentile;  ///< the section's measured P-th percentile of ok latency
  millis min_delay{1};               ///< the percentile delay's floor
  int max = 1;                       ///< extra calls per attempt, 1..3
};

/// `circuit` (docs/resilience.md): opens when too many of the recent calls failed.
struct circuit_policy {
  double failure_ratio = 1.0; ///< (0, 1]
  std::size_t min_calls = 20;
  millis window{10000};
  millis open{5000};
};

/// `retry_budget` (docs/resilience.md): per downstream host:port, retries and hedges over 10 s may be at
/// most ratio × first attempts + min_per_s × 10.
struct retry_budget_policy {
  double ratio = 0.2;
  double min_per_s = 10;
};

/// The descriptors `protos` names, compiled, and each gRPC section's plan over them
/// (gather/downstream/grpc/proto_catalog.hpp): built by build_proto_catalog, outside the config
/// reader (it reads files), and held by the config so that a reload builds new ones and requests
/// in flight keep theirs.
struct proto_catalog;

struct section_config {
  std::string name;
  url_template url; ///< empty for a gRPC section
  std::optional<grpc_call_config> grpc; ///< a gRPC section: the method instead of `url`
  millis timeout{0};
  bool required = false;
  std::optional<nlohmann::json> fallback;
  std::optional<field_ref> fallback_from;
  retry_policy retry;
  millis cache_ttl{0};
  millis stale_ttl{0}; ///< how long past cache_ttl an entry may still stand in for a failed call
  std::vector<field_path> fields;           ///< projection; empty = keep everything
  std::vector<std::string> forward_headers; ///< lower-case names
  /// Sections whose data the URL reads: this section starts only after all of them ended `ok`.
  std::vector<std::size_t> depends_on;
  std::optional<hedge_policy> hedge;
  std::size_t max_concurrent = 0; ///< calls in flight across requests; 0: no limit
  std::optional<circuit_policy> circuit;
  /// `cache_shared` (docs/shared.md): entries kept in the shared store too (needs `shared`).
  bool cache_shared = false;
  /// When the data (after `fields`) is an array, only its first max_items elements; 0: all.
  std::size_t max_items = 0;
  /// The code that stands for the section in `warnings`; empty: `<name>_<status>`.
  std::string warning;
  bool http2 = false; ///< call the URL over HTTP/2 (h2c prior knowledge, or ALPN h2 for https)
  // A route's `write` (docs/config.md#write-routes) is a section with this role: the route's last
  // section, run first and alone, required, never cached or hedged.
  bool write = false;
  bool idempotent = false;  ///< a write that may be retried (`retry` needs it)
  bool pass_errors = false; ///< a refused write's JSON error object (or grpc-message) goes to the client
  std::string method;       ///< an HTTP write's method (the route's by default)
  /// An HTTP write's `body` template: JSON whose strings may hold placeholders; absent: the
  /// client's body as sent, byte for byte.
  std::optional<nlohmann::json> body;
  std::vector<message_placeholder> body_placeholders; ///< every string of `body` holding one
};

struct batch_config {
  url_template url; ///< contains an `{item}` part (empty when `grpc` is given)
  std::optional<grpc_call_config> grpc; ///< its message contains an `{item}` placeholder
  std::size_t max_items = 1000;
  std::size_t concurrency = 16;
  millis timeout{0};
  retry_policy retry;
  millis deadline{10000};
  std::vector<field_path> fields;
  std::vector<std::string> forward_headers; ///< lower-case names
  bool http2 = false; ///< as a section's
};

/// `auth.jwt` (docs/security.md, "Who may come in"): a bearer token checked against a JWK set.
struct jwt_config {
  std::string jwks_file;             ///< exactly one of jwks_file and jwks_url is set
  std::string jwks_url;
  std::chrono::seconds jwks_refresh{300}; ///< a jwks_url is fetched again this often
  std::optional<std::string> issuer;   ///< must equal `iss` when set
  std::optional<std::string> audience; ///< must equal `aud` or one of its entries when set
  std::chrono::seconds leeway{60};     ///< clock skew allowed on exp, nbf, iat
  /// claim -> value it must hold (a word of a spaced string, an entry of an array, or equal).
  std::vector<std::pair<std::string, std::string>> require;
  /// claim -> header name (as written) added to every downstream call of the route.
  std::vector<std::pair<std::string, std::string>> forward_claims;
};

struct auth_config {
  jwt_config jwt;
};

/// `rate_limit` (docs/security.md): a token bucket per client key.
struct rate_limit_config {
  enum class key_kind { ip, header, claim, route };
  key_kind per = key_kind::ip;
  std::string name;          ///< the header (lower-case) or claim name for header:/claim:
  double rate_per_s = 1;     ///< tokens added per second, > 0
  double burst = 1;          ///< bucket size, >= 1 (default ceil(rate_per_s))
  std::size_t max_keys = 100000; ///< buckets kept per route; the least recently used go first
  bool shared = false; ///< one limit for every gateway sharing the store (docs/shared.md)
};

/// One segment of a route's path: literal text or a `{name}` capture of one whole segment.
struct path_segment {
  bool capture = false;
  std::string text; ///< the literal, or the capture's name
};

/// A `{s}` or `{s.a.b}` in a route's `shape`: section `section`'s data, or that field of it.
struct shape_hole {
  std::size_t section = 0; ///< index in the route's `sections`
  field_path field;        ///< empty: the whole data
};

/// A route's `shape` (docs/config.md#shape), compiled once: the template's JSON text cut at its
/// holes, `literals[0] hole[0] literals[1] ... literals[n]`. The last literal leaves the template's
/// outer object open: the answer adds `degraded` and `warnings` (or the closing brace) itself.
struct shape_template {
  std::vector<std::string> literals; ///< holes.size() + 1 pieces of JSON text
  std::vector<shape_hole> holes;
  bool has_members = false; ///< the template object is not `{}`: what follows it needs a comma
};

struct route_config {
  std::string path; ///< as written
  std::vector<path_segment> segments;
  /// `GET` (an aggregate route), `POST`, `PUT`, `PATCH` or `DELETE` (a write route); a batch
  /// route's is `POST`.
  std::string method = "GET";
  /// The routes (indices in config::routes, this one among them, in config order) that share this
  /// route's `path` with other methods: a request takes the one of its method; 405 lists them.
  std::vector<std::size_t> same_path;
  /// The route has a `write`: its last section (sections.back().write), which every other
  /// section waits for.
  bool has_write = false;
  millis deadline{1000};              ///< aggregate routes (batch routes use batch->deadline)
  std::vector<section_config> sections; ///< aggregate route: non-empty; batch route: empty
  std::optional<batch_config> batch;
  /// Every section index once, each after the sections it depends on (URL references and
  /// fallback_from): the order in which final data and fallbacks can be resolved.
  std::vector<std::size_t> resolve_order;
  std::optional<auth_config> auth;
  std::optional<rate_limit_config> rate_limit;
  std::optional<shape_template> shape; ///< aggregate routes; absent: the `data`/`sections` envelope
};

/// Mutual TLS on the cluster's links (PEM files): this process's certificate chain and key, and
/// the CA that must have signed every peer's certificate.
struct cluster_tls_config {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
};

struct cluster_config {
  std::vector<std::string> nodes; ///< "host:port"
  bool local = true;
  std::optional<cluster_tls_config> tls; ///< absent: plain BASP over TCP
  /// A link's TCP connect to a node gives up after this (then retries with backoff).
  millis connect_timeout{2000};
};

/// The operations listener: /metrics, /debug/actors, /dashboard only there (plain HTTP, GET).
struct admin_config {
  std::string listen; ///< "host:port"
};

/// Inbound TLS: HTTPS on `listen` with this certificate chain and private key (PEM files).
struct tls_config {
  std::string cert_file;
  std::string key_file;
};

/// What the HTTP front accepts from a client (docs/security.md lists what crossing each gets).
struct inbound_limits {
  std::size_t max_connections = 10000;       ///< open connections; one more is closed at once
  std::size_t max_request_line_bytes = 8192; ///< longer: 414
  std::size_t max_header_bytes = 16384;      ///< header lines together, request line excluded: 431
  std::size_t max_headers = 100;             ///< more header lines: 431
  millis request_timeout{10000};  ///< first byte to last of one request (head and body): slowloris
  millis keep_alive_idle{60000};  ///< an idle kept-alive connection is closed after this
};

/// HTTP/2 on the inbound side (docs/config.md#http2), per connection. Each `max_*_per_second` is a
/// token bucket holding that many tokens and refilled at that rate: a client over it gets GOAWAY
/// (ENHANCE_YOUR_CALM) and is closed.
struct http2_limits {
  std::size_t max_concurrent_streams = 100;   ///< SETTINGS_MAX_CONCURRENT_STREAMS; more: refused
  std::size_t max_header_list_bytes = 32768;  ///< decoded, names + values + 32 a field: 431
  std::size_t initial_window_bytes = 65535;   ///< SETTINGS_INITIAL_WINDOW_SIZE (request bodies)
  std::size_t max_resets_per_second = 100;    ///< RST_STREAM from the client (rapid reset)
  std::size_t max_control_frames_per_second = 100; ///< PING, SETTINGS and PRIORITY from the client
  std::size_t max_continuation_frames = 8;    ///< CONTINUATION frames after one HEADERS
  /// A progressive answer's bytes waiting on one stream for the client's window; more: reset.
  std::size_t max_stream_buffer_bytes = 1048576;
};

/// Tracing (docs/operations.md, "Tracing"): spans exported as OTLP/HTTP JSON to a collector.
struct tracing_config {
  std::string otlp_endpoint;            ///< http(s) URL the spans are POSTed to, e.g. .../v1/traces
  std::string service_name = "gather";  ///< the resource's service.name
  double sample_ratio = 1.0;            ///< share of new traces sampled (an inbound flag decides its own)
  std::size_t max_queue_spans = 2048;   ///< spans waiting for export; more are dropped and counted
  std::size_t max_batch_spans = 512;    ///< spans per export POST; a full batch is sent at once
  millis export_interval{2000};         ///< a non-empty queue is exported at least this often
  millis export_timeout{1000};          ///< one export POST, connect to reply
};

/// `cors` (docs/config.md, "CORS"): the browser origins that may call the gateway.
struct cors_config {
  std::vector<std::string> allow_origins;  ///< `scheme://host[:port]`, lower-case; empty when any
  bool any_origin = false;                 ///< `["*"]`: every origin (never with credentials)
  std::vector<std::string> allow_headers;  ///< request headers a preflight may ask for, lower-case
  std::vector<std::string> expose_headers; ///< response headers a page's script may read
  std::int64_t max_age_s = 600;            ///< how long a browser may keep a preflight's answer
  bool allow_credentials = false;          ///< cookies and Authorization from the page
};

/// A content coding of a response body (RFC 9110 §8.4.1).
enum class content_coding : std::uint8_t { identity, gzip, br };

/// `compression` (docs/config.md, "Compression"): JSON answers compressed for clients that accept it.
struct compression_config {
  std::size_t min_bytes = 1024; ///< smaller whole answers stay identity (streams: always compressed)
  std::vector<content_coding> encodings{content_coding::br, content_coding::gzip}; ///< preference
  int gzip_level = 6; ///< zlib's 1..9
  int br_quality = 4; ///< brotli's 0..11
};

/// `shared` (docs/shared.md): the Redis server several gateways share rate limits and cached
/// answers through.
struct shared_config {
  std::string redis;         ///< as written: redis://host[:port][/db]
  std::string host;          ///< a host name, an IPv4 address or an IPv6 one (without brackets)
  int port = 6379;
  int db = 0;
  std::string password_file; ///< empty: no AUTH
  std::string prefix = "gather:"; ///< every key the gateway writes starts with it
  millis timeout{20};        ///< a store operation not answered by then is a store error
  millis sync{50};           ///< 0: every limit decision asks the store; N: counts pushed every N ms
};

struct config {
  std::string listen = "127.0.0.1:8080";
  /// Threads that run every connection, every downstream call and every actor: one event loop each.
  std::size_t io_threads = 1;
  inbound_limits inbound;
  http2_limits http2;
  std::optional<tls_config> tls;
  std::size_t max_inflight = 1024;
  std::size_t max_body_bytes = 1048576;
  std::size_t max_response_bytes = 8388608;
  std::size_t cache_max_entries = 100000;  ///< section cache bound, all sections together
  std::size_t cache_max_bytes = 268435456; ///< 256 MiB of keys and data
  std::vector<route_config> routes;
  std::optional<cluster_config> cluster;
  std::optional<admin_config> admin; ///< absent: the operations paths are served on `listen`
  std::optional<tracing_config> tracing;
  retry_budget_policy retry_budget;
  /// Sent on every downstream call with the milliseconds it may still take, and read on inbound
  /// requests to shorten their deadline (matched in any case); empty: off.
  std::string deadline_header = "X-Timeout-Ms";
  std::optional<cors_config> cors;               ///< absent: no CORS headers, OPTIONS is 405
  std::optional<compression_config> compression; ///< absent: every answer identity
  protos_config protos;
  /// `protos` compiled and the gRPC sections resolved; null until build_proto_catalog ran (and
  /// always for a config without gRPC sections).
  std::shared_ptr<const proto_catalog> descriptors;
  std::optional<shared_config> shared;           ///< absent: nothing is shared with other gateways
  /// Behind a load balancer (docs/gateway.md): the peers whose X-Forwarded-For / Forwarded are
  /// believed; whether every connection begins with a PROXY protocol header (from one of them);
  /// how long after SIGTERM the gateway keeps serving while /readyz answers 503.
  ip_ranges trusted_proxies;
  bool listen_proxy_protocol = false;
  millis drain_delay{0};
  /// A pooled downstream connection (HTTP/1.1 or HTTP/2) with no call for this long is closed; 0:
  /// never.
  millis downstream_idle_timeout{60000};
  /// An HTTP/2 downstream connection going away (GOAWAY) whose open streams get no frame for this
  /// long is closed; its calls end as a connection failure instead of waiting out their timeout.
  millis downstream_drain_quiet{1000};
  /// An https origin whose ALPN chose HTTP/1.1 is called over HTTP/1.1 by `http2` calls for this
  /// long without offering h2 again; 0: offered on every new connection.
  millis downstream_alpn_memory{60000};
  /// Idle HTTP/1.1 keep-alive connections each downstream event loop keeps, all origins together;
  /// one given back beyond it is closed. 0: none kept (a connection per call).
  std::size_t downstream_max_idle_connections = 1024;
  /// `upstreams` (docs/upstreams.md), sorted by name.
  std::vector<upstream_config> upstreams;
  /// The upstream a URL (or gRPC target) calls, by its host; null for a plain origin.
  const upstream_config* upstream_of(std::string_view url) const;
};

/// The host of an http(s) URL as written ("" when the URL has none or it holds a placeholder),
/// and whether a port follows it.
struct url_host_part {
  std::string host;
  bool has_port = false;
};
url_host_part url_host(std::string_view url);

/// Either a config or every problem found, one string each: "<json path>: <what is wrong>",
/// e.g. "routes[1].sections[0].timeout_ms: must be an integer from 1 to 600000".
struct config_result {
  std::optional<config> value;
  std::vector<std::string> problems;
};

config_result load_config(std::string_view json_text);
config_result load_config_file(const std::string& file_path);

/// Splits "host:port" (port 0..65535); nullopt when malformed.
std::optional<std::pair<std::string, int>> split_host_port(std::string_view text);

} // namespace gather
