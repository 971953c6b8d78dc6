// Internal to the config reader (app/config/*.cpp): what its parts share. Only config.hpp is
// an interface; nothing outside app/config includes this.
//
// Validation never stops at the first problem: every reader reports what is wrong under the value's
// JSON path and goes on with the default, so one run of `gather check` lists everything. Checks
// that would only repeat an earlier problem (a capture reference when the route path is already
// invalid, say) are left out. Problems come out in the order the reads run, and the tests compare
// that order: moving a read moves its problems.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/config/config.hpp"

namespace gather::config_reader {

using json = nlohmann::json;

/// The path under which problems with the document as a whole are reported.
inline constexpr const char* root_path = "$";

inline constexpr long long max_timeout_ms = 600000;

// ---------------------------------------------------------------------------------------------
// Text helpers (text_helpers.cpp)

std::string in_quotes(std::string_view text);
std::string member_path(const std::string& parent, std::string_view key);
std::string element_path(const std::string& parent, std::size_t index);
std::vector<std::string_view> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& pieces, std::string_view separator);

template <class List, class Value> bool contains(const List& list, const Value& value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

/// GET, POST, PUT, PATCH or DELETE (case-sensitive, as a method token is).
bool is_route_method(std::string_view method);
bool is_alpha(char c);
bool is_digit(char c);
/// [a-z][a-z0-9_]*: a section's name, and a `warning` code.
bool is_section_name(std::string_view name);
/// An RFC 9110 token: what a header name may be.
bool is_token(std::string_view text);
std::string lower_case(std::string_view text);
/// "a.b" -> {"a", "b"}; nullopt when empty or when a segment is empty ("a..b", ".a", "a.").
std::optional<field_path> parse_dotted(std::string_view text);

// ---------------------------------------------------------------------------------------------
// Problems and typed reads (object_reader.cpp)

class problem_list {
public:
  void add(const std::string& path, const std::string& message) {
    items_.push_back(path + ": " + message);
  }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  std::vector<std::string> take() { return std::move(items_); }

private:
  std::vector<std::string> items_;
};

std::string an_integer(long long min, long long max);

/// The value as an integer in [min, max]; nullopt for anything else, 300.0 and "300" included.
std::optional<long long> integer_in(const json& value, long long min, long long max);

/// One JSON object being read: finds members, reads them typed and reports problems under their
/// paths. A member that is absent keeps the caller's default; one that is invalid is reported and
/// keeps it too.
class object_reader {
public:
  object_reader(const json& object, std::string path, problem_list& problems)
      : object_(object), path_(std::move(path)), problems_(problems) {}

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const { return member_path(path_, key); }
  problem_list& problems() const { return problems_; }

  const json* find(std::string_view key) const;
  void problem(std::string_view key, const std::string& message) const;
  void reject_unknown_keys(std::initializer_list<std::string_view> known) const;

  /// Reports a missing required member; `expected` says what it should be.
  bool require(std::string_view key, const std::string& expected) const;

  template <class Integer>
  void read_integer(std::string_view key, long long min, long long max, Integer& out) const {
    const json* value = find(key);
    if (!value)
      return;
    if (const auto number = integer_in(*value, min, max))
      out = static_cast<Integer>(*number);
    else
      problem(key, "must be " + an_integer(min, max));
  }

  void read_millis(std::string_view key, long long min, long long max, millis& out) const;
  void read_required_millis(std::string_view key, long long min, long long max, millis& out) const;
  /// Any JSON number (integer or not) in [min, max].
  void read_number(std::string_view key, long long min, long long max, double& out) const;
  void read_bool(std::string_view key, bool& out) const;
  /// The member as a string; nullopt (reported as `expected`) when present but not a string.
  std::optional<std::string> read_string(std::string_view key, const std::string& expected) const;
  /// The member as an object to read further; nullopt when absent or (reported) not an object.
  std::optional<object_reader> read_object(std::string_view key) const;

private:
  const json& object_;
  std::string path_;
  problem_list& problems_;
};

// ---------------------------------------------------------------------------------------------
/// Required non-empty file names (`cert_file`, ...), each into its string.
void read_file_names(const object_reader& object,
                     std::initializer_list<std::pair<const char*, std::string*>> keys);

// The document (read_top_level.cpp, read_routes.cpp, read_cluster.cpp)

config read_config(const json& document, problem_list& problems);
std::vector<route_config> read_routes(const object_reader& top);
/// The `cluster` object; nullopt when absent or (reported) not an object.
std::optional<cluster_config> read_cluster(const object_reader& top);
/// The `tracing` object (read_tracing.cpp); nullopt when absent or (reported) not an object.
std::optional<tracing_config> read_tracing(const object_reader& top);
/// The `cors` and `compression` objects (read_browser.cpp); nullopt when absent or (reported)
/// not an object.
std::optional<cors_config> read_cors(const object_reader& top);
std::optional<compression_config> read_compression(const object_reader& top);
/// `trusted_proxies`, `listen_proxy_protocol`, `drain_delay_ms` (read_balancer.cpp).
void read_load_balancer(const object_reader& top, config& out);
/// `upstreams` (read_upstreams.cpp), sorted by name; and the URLs and targets that name one
/// (no port allowed), reported by JSON path.
std::vector<upstream_config> read_upstreams(const object_reader& top);
void check_upstream_users(const config& cfg, problem_list& problems);
/// The `shared` object (read_shared.cpp); nullopt when absent or (reported) invalid.
std::optional<shared_config> read_shared(const object_reader& top);
/// `rate_limit.shared` and `cache_shared` need a top-level `shared` (reported by JSON path);
/// `shared_written`: the document has one (valid or not: an invalid one is reported already).
void check_shared_users(const config& cfg, bool shared_written, problem_list& problems);

// ---------------------------------------------------------------------------------------------
// Route paths (route_paths.cpp)

/// Reads `path` into the route; false when it is missing or invalid (problems reported).
bool read_route_path(const object_reader& route, route_config& out);
/// /healthz, /readyz, /metrics, /debug/actors, /dashboard: served before any route (the last
/// three only without `admin`).
bool is_builtin_path(std::string_view path);
/// Routes overlap when some request path could match both.
bool overlap(const route_config& a, const route_config& b);
bool has_capture(const route_config& route, std::string_view name);

// ---------------------------------------------------------------------------------------------
// URL templates (read_url_template.cpp)

/// What the placeholders of one URL template may refer to.
struct template_scope {
  /// The route whose captures `{name}` may use; null when its path is invalid (left unchecked).
  const route_config* route = nullptr;
  /// Section name -> index; null in a batch url, which cannot refer to sections.
  const std::map<std::string, std::size_t>* sections = nullptr;
  /// The section whose url this is.
  std::optional<std::size_t> self;
  /// The route has `auth`: only then may the url use `{claim.NAME}`.
  bool auth = false;
  /// The route's method takes a body: only then may a template use `{body}` and `{body.a.b}`.
  bool body = false;
  /// The template is the write's: it runs before every section and cannot read their data.
  bool write = false;
};

std::string placeholder_text(std::string_view name);
/// Problems with the fixed part of a URL (scheme, host, port); empty when it is fine. Also used
/// for URLs that are not templates (tracing.otlp_endpoint).
std::vector<std::string> url_prefix_problems(std::string_view url);
/// Reads the required `url` member as a template; problems are reported under its path.
url_template read_url(const object_reader& object, const template_scope& scope);
/// Literal text and `{...}` placeholders of any string (a URL's, a gRPC message's); every
/// problem with a placeholder is appended to `errors`.
url_template parse_template_text(std::string_view source, const template_scope& scope,
                                 std::vector<std::string>& errors);

// ---------------------------------------------------------------------------------------------
// gRPC (read_grpc.cpp)

/// The `grpc` member of a section or batch; nullopt when absent or (reported) not an object.
std::optional<grpc_call_config> read_grpc(const object_reader& parent, const template_scope& scope);
/// The top-level `protos`.
void read_protos(const object_reader& top, protos_config& out);
/// The sections a gRPC message's placeholders read (kind::section), each once.
void add_message_dependencies(const grpc_call_config& grpc, std::vector<std::size_t>& out);

// ---------------------------------------------------------------------------------------------
// Sections and batches (read_sections.cpp, read_batch.cpp, read_call_settings.cpp)

/// The route's `sections` (may be null on a write route) and its `write` (null when it has none).
void read_sections(const object_reader& route_object, const json* sections, const json* write,
                   bool route_path_valid, route_config& route);
/// Every string of `value` that holds a `{` or `}` is a template (a gRPC message, an HTTP write's
/// body): its placeholders parsed and checked against the scope, problems under its own path.
void collect_placeholders(const json& value, const std::string& pointer, const std::string& path,
                          const template_scope& scope, problem_list& problems,
                          std::vector<message_placeholder>& out);
batch_config read_batch(const object_reader& batch, const route_config& route,
                        bool route_path_valid);

retry_policy read_retry(const object_reader& parent);
std::vector<field_path> read_fields(const object_reader& parent);
std::vector<std::string> read_forward_headers(const object_reader& parent);
/// False for hop-by-hop headers and Host (lower-case name): those are never sent on.
bool forwardable_header(std::string_view lower_name);

/// The route's `shape` (read_shape.cpp), compiled against its sections; nullopt when absent or
/// (reported) invalid. `is_batch`: a batch route has no shape.
std::optional<shape_template> read_shape(const object_reader& route, const route_config& out,
                                         bool is_batch);
/// The same template compiled from the text read again keeping its members' order (nlohmann::json
/// sorts them): the answer's members stand as the configuration writes them.
shape_template compile_ordered_shape(const nlohmann::ordered_json& shape, const route_config& route);

// ---------------------------------------------------------------------------------------------
// Who may come in (read_auth.cpp)

/// The route's `auth`; nullopt when absent or (reported) not an object.
std::optional<auth_config> read_auth(const object_reader& route);
/// The route's `rate_limit`; nullopt when absent or (reported) invalid. `has_auth`: per claim:
/// needs the route's auth.
std::optional<rate_limit_config> read_rate_limit(const object_reader& route, bool has_auth);

// ---------------------------------------------------------------------------------------------
// Resilience (read_resilience.cpp)

/// A section's hedge, max_concurrent and circuit.
void read_resilience(const object_reader& section, section_config& out);
void read_retry_budget(const object_reader& top, retry_budget_policy& out);
void read_deadline_header(const object_reader& top, std::string& out);

// ---------------------------------------------------------------------------------------------
// Checks across a route's sections (section_cross_checks.cpp)

/// References to fields that the referenced section's own `fields` drops could never resolve.
void check_projected_references(const std::vector<section_config>& sections,
                                const std::string& sections_path, problem_list& problems);
/// A `warning` code used by two sections, or equal to another section's default code
/// (`<name>_<status>`), would make `warnings` ambiguous.
void check_warning_codes(const std::vector<section_config>& sections,
                         const std::string& sections_path, problem_list& problems);
/// Reports dependency cycles, or fills the route's resolve order when there is none.
void order_sections(route_config& route, const std::string& sections_path, problem_list& problems);

} // namespace gather::config_reader
