// Loading and validating the configuration file (CONTRACT §2, docs/config.md).
//
// Validation never stops at the first problem: every reader reports what is wrong under the value's
// JSON path and goes on with the default, so one run of `gather check` lists everything. Checks
// that would only repeat an earlier problem (a capture reference when the route path is already
// invalid, say) are left out.

#include "gather/config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <variant>

namespace gather {

namespace {

using json = nlohmann::json;

/// The path under which problems with the document as a whole are reported.
constexpr const char* root_path = "$";

constexpr long long max_timeout_ms = 600000;
constexpr long long max_size_bytes = 1073741824;

/// Built-in endpoints: they take precedence, so a route on one of these paths could never be hit.
constexpr std::string_view builtin_paths[] = {"/healthz", "/metrics", "/debug/actors",
                                              "/dashboard"};

/// Hop-by-hop headers and Host describe one connection, never the request: never forwarded.
constexpr std::string_view unforwardable_headers[] = {"connection",
                                                      "keep-alive",
                                                      "proxy-authenticate",
                                                      "proxy-authorization",
                                                      "proxy-connection",
                                                      "te",
                                                      "trailer",
                                                      "transfer-encoding",
                                                      "upgrade",
                                                      "host"};

/// Names that would be read as `{query.q}`, `{header.h}` or `{item}` in a URL template.
constexpr std::string_view reserved_section_names[] = {"query", "header", "item"};

// ---------------------------------------------------------------------------------------------
// Small text helpers

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string member_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string element_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const std::size_t at = text.find(separator);
    pieces.push_back(text.substr(0, at));
    if (at == std::string_view::npos)
      return pieces;
    text.remove_prefix(at + 1);
  }
}

std::string join(const std::vector<std::string>& pieces, std::string_view separator) {
  std::string out;
  for (const std::string& piece : pieces)
    out += (out.empty() ? "" : std::string(separator)) + piece;
  return out;
}

template <class List, class Value> bool contains(const List& list, const Value& value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// RFC 9110 token characters: what a header name may be made of.
bool is_token_char(char c) {
  return is_alpha(c) || is_digit(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

/// Characters a literal route segment may hold: RFC 3986 pchar without percent-escapes.
bool is_path_literal_char(char c) {
  return is_alpha(c) || is_digit(c) ||
         std::string_view("._~!$&'()*+,;=:@-").find(c) != std::string_view::npos;
}

/// [A-Za-z_][A-Za-z0-9_]*: a path capture's name.
bool is_capture_name(std::string_view name) {
  return !name.empty() && (is_alpha(name[0]) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

/// [a-z][a-z0-9_]*: a section's name.
bool is_section_name(std::string_view name) {
  return !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_'; });
}

std::string lower_case(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

/// "a.b" -> {"a", "b"}; nullopt when empty or when a segment is empty ("a..b", ".a", "a.").
std::optional<field_path> parse_dotted(std::string_view text) {
  field_path path;
  for (const std::string_view piece : split(text, '.')) {
    if (piece.empty())
      return std::nullopt;
    path.emplace_back(piece);
  }
  return path;
}

bool is_prefix(const field_path& prefix, const field_path& path) {
  return prefix.size() <= path.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

// ---------------------------------------------------------------------------------------------
// Problems and typed reads

class problem_list {
public:
  void add(const std::string& path, const std::string& message) {
    items_.push_back(path + ": " + message);
  }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> take() { return std::move(items_); }

private:
  std::vector<std::string> items_;
};

std::string an_integer(long long min, long long max) {
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

/// The value as an integer in [min, max]; nullopt for anything else, 300.0 and "300" included.
std::optional<long long> integer_in(const json& value, long long min, long long max) {
  long long number = 0;
  if (value.is_number_unsigned()) {
    const auto unsigned_number = value.get<std::uint64_t>();
    if (unsigned_number > static_cast<std::uint64_t>(max))
      return std::nullopt;
    number = static_cast<long long>(unsigned_number);
  } else if (value.is_number_integer()) {
    number = value.get<std::int64_t>();
  } else {
    return std::nullopt;
  }
  if (number < min || number > max)
    return std::nullopt;
  return number;
}

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

  const json* find(std::string_view key) const {
    const auto it = object_.find(std::string(key));
    return it == object_.end() ? nullptr : &*it;
  }

  void problem(std::string_view key, const std::string& message) const {
    problems_.add(path_of(key), message);
  }

  void reject_unknown_keys(std::initializer_list<std::string_view> known) const {
    for (const auto& member : object_.items()) {
      if (!contains(known, member.key()))
        problem(member.key(), "unknown key");
    }
  }

  /// Reports a missing required member; `expected` says what it should be.
  bool require(std::string_view key, const std::string& expected) const {
    if (find(key))
      return true;
    problem(key, "is required (" + expected + ")");
    return false;
  }

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

  void read_millis(std::string_view key, long long min, long long max, millis& out) const {
    long long ms = out.count();
    read_integer(key, min, max, ms);
    out = millis(ms);
  }

  void read_required_millis(std::string_view key, long long min, long long max, millis& out) const {
    if (require(key, an_integer(min, max)))
      read_millis(key, min, max, out);
  }

  /// Any JSON number (integer or not) in [min, max].
  void read_number(std::string_view key, long long min, long long max, double& out) const {
    const json* value = find(key);
    if (!value)
      return;
    const auto in_range = [&](double number) { return number >= min && number <= max; };
    if (value->is_number() && in_range(value->get<double>()))
      out = value->get<double>();
    else
      problem(key, "must be a number from " + std::to_string(min) + " to " + std::to_string(max));
  }

  void read_bool(std::string_view key, bool& out) const {
    const json* value = find(key);
    if (!value)
      return;
    if (value->is_boolean())
      out = value->get<bool>();
    else
      problem(key, "must be true or false");
  }

  /// The member as a string; nullopt (reported as `expected`) when present but not a string.
  std::optional<std::string> read_string(std::string_view key, const std::string& expected) const {
    const json* value = find(key);
    if (!value)
      return std::nullopt;
    if (value->is_string())
      return value->get<std::string>();
    problem(key, "must be " + expected);
    return std::nullopt;
  }

  /// The member as an object to read further; nullopt when absent or (reported) not an object.
  std::optional<object_reader> read_object(std::string_view key) const {
    const json* value = find(key);
    if (!value)
      return std::nullopt;
    if (value->is_object())
      return object_reader(*value, path_of(key), problems_);
    problem(key, "must be an object");
    return std::nullopt;
  }

private:
  const json& object_;
  std::string path_;
  problem_list& problems_;
};

// ---------------------------------------------------------------------------------------------
// Parsing the text

/// Reports keys that appear twice in one object: nlohmann would silently keep the last one, and a
/// gateway that quietly ignores half of what was written is worse than one that refuses it.
class duplicate_key_finder {
public:
  explicit duplicate_key_finder(problem_list& problems) : problems_(&problems) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      frames_.push_back(frame{child_path(), event == json::parse_event_t::array_start, 0, {}, {}});
      break;
    case json::parse_event_t::key:
      on_key(parsed.get<std::string>());
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      frames_.pop_back();
      value_done();
      break;
    case json::parse_event_t::value:
      value_done();
      break;
    }
    return true;
  }

private:
  struct frame {
    std::string path;
    bool array = false;
    std::size_t next_index = 0;
    std::string key;
    std::set<std::string> keys;
  };

  std::string child_path() const {
    if (frames_.empty())
      return "";
    const frame& parent = frames_.back();
    return parent.array ? element_path(parent.path, parent.next_index)
                        : member_path(parent.path, parent.key);
  }

  void on_key(std::string key) {
    frame& object = frames_.back();
    if (!object.keys.insert(key).second)
      problems_->add(member_path(object.path, key), "duplicate key");
    object.key = std::move(key);
  }

  void value_done() {
    if (!frames_.empty() && frames_.back().array)
      ++frames_.back().next_index;
  }

  problem_list* problems_;
  std::vector<frame> frames_;
};

std::optional<json> parse_document(std::string_view text, problem_list& problems) {
  try {
    return json::parse(text.begin(), text.end(), duplicate_key_finder(problems));
  } catch (const json::parse_error& error) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string detail = error.what();
    if (const std::size_t end_of_id = detail.find("] "); end_of_id != std::string::npos)
      detail.erase(0, end_of_id + 2);
    problems.add(root_path, "invalid JSON (byte " + std::to_string(error.byte) + "): " + detail);
    return std::nullopt;
  } catch (const json::out_of_range& error) {
    // A number beyond a double (1e400) is out_of_range.406, not a parse_error (found by fuzzing:
    // it used to escape load_config and abort `gather check`).
    std::string detail = error.what();
    if (const std::size_t end_of_id = detail.find("] "); end_of_id != std::string::npos)
      detail.erase(0, end_of_id + 2);
    problems.add(root_path, "invalid JSON: " + detail);
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------
// Route paths

bool is_builtin_path(std::string_view path) { return contains(builtin_paths, path); }

/// Parses one segment of a route path; the problem with it, if any.
std::optional<std::string> parse_path_segment(std::string_view raw, path_segment& out) {
  if (raw.empty())
    return "empty segment (\"//\" or a trailing \"/\")";
  if (raw.front() == '{') {
    const std::string_view name = raw.substr(1, raw.size() - 1 - (raw.back() == '}'));
    if (raw.back() != '}' || !is_capture_name(name))
      return "segment " + in_quotes(raw) +
             ": a capture is a whole segment {name} with name [A-Za-z_][A-Za-z0-9_]*";
    out = {true, std::string(name)};
    return std::nullopt;
  }
  if (!std::all_of(raw.begin(), raw.end(), is_path_literal_char))
    return "segment " + in_quotes(raw) +
           ": a literal segment may hold only A-Z a-z 0-9 . _ ~ ! $ & ' ( ) * + , ; = : @ - "
           "(a capture is a whole segment {name})";
  if (raw == "." || raw == "..")
    return "segment " + in_quotes(raw) +
           ": dot segments are removed by clients and proxies, so they never arrive";
  out = {false, std::string(raw)};
  return std::nullopt;
}

/// Parses a route path into `segments`; every problem with it ("/" has no segments).
std::vector<std::string> parse_route_path(std::string_view path,
                                          std::vector<path_segment>& segments) {
  std::vector<std::string> errors;
  if (is_builtin_path(path))
    errors.push_back(in_quotes(path) +
                     " is a built-in endpoint, which takes precedence over routes");
  if (path == "/")
    return errors;
  std::set<std::string> capture_names;
  for (const std::string_view raw : split(path.substr(1), '/')) {
    path_segment segment;
    if (auto error = parse_path_segment(raw, segment)) {
      errors.push_back(*error);
      continue;
    }
    if (segment.capture && !capture_names.insert(segment.text).second)
      errors.push_back("capture {" + segment.text + "} appears twice");
    segments.push_back(std::move(segment));
  }
  return errors;
}

/// Reads `path` into the route; false when it is missing or invalid (problems reported).
bool read_route_path(const object_reader& route, route_config& out) {
  const std::string expected = "a string starting with \"/\"";
  if (!route.require("path", expected))
    return false;
  const std::optional<std::string> path = route.read_string("path", expected);
  if (!path)
    return false;
  if (path->empty() || path->front() != '/') {
    route.problem("path", "must be " + expected);
    return false;
  }
  out.path = *path;
  const std::vector<std::string> errors = parse_route_path(*path, out.segments);
  for (const std::string& error : errors)
    route.problem("path", error);
  return errors.empty();
}

/// Routes overlap when some request path could match both.
bool overlap(const route_config& a, const route_config& b) {
  if (a.segments.size() != b.segments.size())
    return false;
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    const path_segment& x = a.segments[i];
    const path_segment& y = b.segments[i];
    if (!x.capture && !y.capture && x.text != y.text)
      return false;
  }
  return true;
}

bool has_capture(const route_config& route, std::string_view name) {
  return std::any_of(route.segments.begin(), route.segments.end(),
                     [&](const path_segment& s) { return s.capture && s.text == name; });
}

// ---------------------------------------------------------------------------------------------
// URL templates

/// What the placeholders of one URL template may refer to.
struct template_scope {
  /// The route whose captures `{name}` may use; null when its path is invalid (left unchecked).
  const route_config* route = nullptr;
  /// Section name -> index; null in a batch url, which cannot refer to sections.
  const std::map<std::string, std::size_t>* sections = nullptr;
  /// The section whose url this is.
  std::optional<std::size_t> self;
};

std::string placeholder_text(std::string_view name) { return "{" + std::string(name) + "}"; }

/// Parses the inside of one `{...}`; the part, or the problem with it.
std::variant<url_part, std::string> parse_placeholder(std::string_view name,
                                                      const template_scope& scope) {
  using kind = url_part::kind;
  const std::string shown = placeholder_text(name);
  const std::optional<field_path> pieces = parse_dotted(name);
  if (!pieces)
    return shown + ": empty name";
  const std::string& head = pieces->front();
  const std::string rest(name.substr(std::min(name.size(), head.size() + 1)));
  if (pieces->size() == 1) {
    if (!scope.sections && head == "item")
      return url_part{kind::item, head, {}, 0};
    if (scope.route && !has_capture(*scope.route, head))
      return shown + ": the route path has no capture {" + head + "}";
    return url_part{kind::capture, head, {}, 0};
  }
  if (head == "query")
    return url_part{kind::query, rest, {}, 0};
  if (head == "header") {
    if (!is_token(rest))
      return shown + ": " + in_quotes(rest) + " is not a header name";
    return url_part{kind::header, lower_case(rest), {}, 0};
  }
  if (!scope.sections)
    return shown + ": a batch url cannot refer to sections";
  const auto section = scope.sections->find(head);
  if (section == scope.sections->end())
    return shown + ": this route has no section " + in_quotes(head);
  if (section->second == scope.self)
    return shown + ": a section cannot refer to its own data";
  return url_part{kind::section, head, field_path(pieces->begin() + 1, pieces->end()),
                  section->second};
}

/// Appends literal text, merging it into a literal part that ends the list.
void append_literal(std::vector<url_part>& parts, std::string_view text) {
  if (text.empty())
    return;
  if (parts.empty() || parts.back().what != url_part::kind::literal)
    parts.push_back({url_part::kind::literal, "", {}, 0});
  parts.back().text += text;
}

/// Problems with the fixed part of a URL: scheme, host and port never hold placeholders.
std::vector<std::string> url_prefix_problems(std::string_view url) {
  const bool has_control = std::any_of(url.begin(), url.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '\x7f';
  });
  std::vector<std::string> errors;
  if (has_control)
    errors.push_back("must not contain spaces or control characters");
  const std::size_t scheme_end = url.rfind("http://", 0) == 0    ? 7
                                 : url.rfind("https://", 0) == 0 ? 8
                                                                 : 0;
  if (scheme_end == 0) {
    errors.push_back("must start with http:// or https://");
    return errors;
  }
  const std::string_view authority =
      url.substr(scheme_end, url.find_first_of("/?", scheme_end) - scheme_end);
  if (authority.find_first_of("{}") != std::string_view::npos)
    errors.push_back(
        "placeholders are allowed only in the path and query, not in the host or port");
  else if (authority.empty())
    errors.push_back("needs a host after the scheme");
  return errors;
}

/// Parses `source` into parts; every problem with it is appended to `errors`.
url_template parse_url_template(std::string_view source, const template_scope& scope,
                                std::vector<std::string>& errors) {
  url_template tpl{std::string(source), {}};
  for (std::string& error : url_prefix_problems(source))
    errors.push_back(std::move(error));
  std::size_t at = 0;
  while (at < source.size()) {
    const std::size_t brace = source.find_first_of("{}", at);
    append_literal(tpl.parts, source.substr(at, brace - at));
    if (brace == std::string_view::npos)
      break;
    const std::size_t close = source.find_first_of("{}", brace + 1);
    if (source[brace] == '}' || close == std::string_view::npos || source[close] == '{') {
      errors.push_back("unbalanced " + in_quotes(source.substr(brace, 1)) + " at offset " +
                       std::to_string(brace));
      at = brace + 1;
      continue;
    }
    auto part = parse_placeholder(source.substr(brace + 1, close - brace - 1), scope);
    if (auto* error = std::get_if<std::string>(&part))
      errors.push_back(std::move(*error));
    else
      tpl.parts.push_back(std::move(std::get<url_part>(part)));
    at = close + 1;
  }
  return tpl;
}

/// Reads the required `url` member as a template; problems are reported under its path.
url_template read_url(const object_reader& object, const template_scope& scope) {
  const std::string expected = "an http:// or https:// URL template";
  if (!object.require("url", expected))
    return {};
  const std::optional<std::string> source =
      object.read_string("url", "a string (" + expected + ")");
  if (!source)
    return {};
  std::vector<std::string> errors;
  url_template tpl = parse_url_template(*source, scope, errors);
  for (const std::string& error : errors)
    object.problem("url", error);
  return tpl;
}

// ---------------------------------------------------------------------------------------------
// Members shared by sections and batches

retry_policy read_retry(const object_reader& parent) {
  retry_policy retry;
  if (const auto object = parent.read_object("retry")) {
    object->reject_unknown_keys({"attempts", "backoff_ms", "multiplier"});
    object->read_integer("attempts", 1, 10, retry.attempts);
    object->read_millis("backoff_ms", 0, max_timeout_ms, retry.backoff);
    object->read_number("multiplier", 1, 10, retry.multiplier);
  }
  return retry;
}

std::vector<field_path> read_fields(const object_reader& parent) {
  std::vector<field_path> fields;
  const json* value = parent.find("fields");
  if (!value)
    return fields;
  // [] would read as "keep nothing" but the runtime takes empty as "keep everything".
  if (!value->is_array() || value->empty()) {
    parent.problem("fields", "must be a non-empty array of dotted field paths like \"a.b\" (leave "
                             "it out to keep everything)");
    return fields;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& field = (*value)[i];
    std::optional<field_path> path;
    if (field.is_string())
      path = parse_dotted(field.get_ref<const std::string&>());
    if (path)
      fields.push_back(std::move(*path));
    else
      parent.problems().add(element_path(parent.path_of("fields"), i),
                            "must be a dotted field path like \"a.b\" with no empty segment");
  }
  return fields;
}

std::vector<std::string> read_forward_headers(const object_reader& parent) {
  std::vector<std::string> headers;
  const json* value = parent.find("forward_headers");
  if (!value)
    return headers;
  if (!value->is_array()) {
    parent.problem("forward_headers", "must be an array of header names");
    return headers;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& name = (*value)[i];
    const std::string path = element_path(parent.path_of("forward_headers"), i);
    if (!name.is_string() || !is_token(name.get_ref<const std::string&>())) {
      parent.problems().add(path, "must be a header name (letters, digits and !#$%&'*+-.^_`|~)");
      continue;
    }
    const std::string lower = lower_case(name.get_ref<const std::string&>());
    if (contains(unforwardable_headers, lower))
      parent.problems().add(path, in_quotes(lower) + " is never forwarded (hop-by-hop or Host)");
    else if (!contains(headers, lower))
      headers.push_back(lower);
  }
  return headers;
}

// ---------------------------------------------------------------------------------------------
// Sections

/// Reads `fallback_from` ("s" or "s.a.b"); nullopt when absent or invalid (reported).
std::optional<field_ref> read_fallback_from(const object_reader& section,
                                            const template_scope& scope) {
  const std::string expected = "a string \"s\" or \"s.a.b\" naming another section's data";
  const std::optional<std::string> text = section.read_string("fallback_from", expected);
  if (!text)
    return std::nullopt;
  const std::optional<field_path> pieces = parse_dotted(*text);
  if (!pieces) {
    section.problem("fallback_from", "must be " + expected);
    return std::nullopt;
  }
  const auto target = scope.sections->find(pieces->front());
  if (target == scope.sections->end()) {
    section.problem("fallback_from", "this route has no section " + in_quotes(pieces->front()));
    return std::nullopt;
  }
  if (target->second == scope.self) {
    section.problem("fallback_from", "a section cannot fall back to its own data");
    return std::nullopt;
  }
  return field_ref{target->second, field_path(pieces->begin() + 1, pieces->end())};
}

void read_section_name(const object_reader& section, std::size_t index,
                       const std::map<std::string, std::size_t>& names, section_config& out) {
  const std::string expected = "a string matching [a-z][a-z0-9_]*";
  if (!section.require("name", expected))
    return;
  const std::optional<std::string> name = section.read_string("name", expected);
  if (!name)
    return;
  out.name = *name;
  if (!is_section_name(*name))
    section.problem("name", "must match [a-z][a-z0-9_]*");
  else if (contains(reserved_section_names, *name))
    section.problem(
        "name",
        in_quotes(*name) +
            " is reserved: {query.q}, {header.h} and {item} mean something else in URL templates");
  else if (const std::size_t first = names.at(*name); first != index)
    section.problem("name", "duplicate section name " + in_quotes(*name) + " (also sections[" +
                                std::to_string(first) + "])");
}

/// An optional section must say how it degrades. A `required` that is not a boolean is reported
/// on its own and does not also count as optional.
bool is_optional(const object_reader& section) {
  const json* required = section.find("required");
  return !required || (required->is_boolean() && !required->get<bool>());
}

/// The distinct sections a URL reads, in route order.
std::vector<std::size_t> url_dependencies(const url_template& url) {
  std::set<std::size_t> sections;
  for (const url_part& part : url.parts) {
    if (part.what == url_part::kind::section)
      sections.insert(part.section);
  }
  return {sections.begin(), sections.end()};
}

section_config read_section(const object_reader& section, std::size_t index,
                            const route_config& route, bool route_path_valid,
                            const std::map<std::string, std::size_t>& names) {
  section.reject_unknown_keys({"name", "url", "timeout_ms", "required", "fallback", "fallback_from",
                               "retry", "cache_ttl_ms", "stale_ttl_ms", "fields", "forward_headers"});
  const template_scope scope{route_path_valid ? &route : nullptr, &names, index};
  section_config out;
  read_section_name(section, index, names, out);
  out.url = read_url(section, scope);
  out.depends_on = url_dependencies(out.url);
  section.read_required_millis("timeout_ms", 1, max_timeout_ms, out.timeout);
  section.read_bool("required", out.required);
  if (const json* fallback = section.find("fallback")) {
    if (fallback->is_null())
      section.problem("fallback", "must not be null (any other JSON value; leave it out for none)");
    else
      out.fallback = *fallback;
  }
  out.fallback_from = read_fallback_from(section, scope);
  out.retry = read_retry(section);
  section.read_millis("cache_ttl_ms", 0, 86400000, out.cache_ttl);
  section.read_millis("stale_ttl_ms", 0, 86400000, out.stale_ttl);
  if (out.stale_ttl.count() > 0 && out.cache_ttl.count() == 0)
    section.problem("stale_ttl_ms", "needs cache_ttl_ms: only cached data can be served stale");
  out.fields = read_fields(section);
  out.forward_headers = read_forward_headers(section);
  if (is_optional(section) && !section.find("fallback") && !section.find("fallback_from"))
    section.problems().add(section.path(),
                           "optional section needs \"fallback\" or \"fallback_from\"");
  return out;
}

/// Section name -> index of its first occurrence; names that break the naming rule are included so
/// that references to them are not reported a second time.
std::map<std::string, std::size_t> section_names(const json& sections) {
  std::map<std::string, std::size_t> names;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const json& section = sections[i];
    if (section.is_object() && section.contains("name") && section["name"].is_string())
      names.emplace(section["name"].get<std::string>(), i);
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Dependencies between sections

using dependency_graph = std::vector<std::vector<std::size_t>>;

/// For each section, the distinct sections it waits for: URL references and fallback_from.
dependency_graph dependency_edges(const std::vector<section_config>& sections) {
  dependency_graph edges;
  for (const section_config& section : sections) {
    std::vector<std::size_t> waits_for = section.depends_on;
    if (section.fallback_from && !contains(waits_for, section.fallback_from->section))
      waits_for.push_back(section.fallback_from->section);
    edges.push_back(std::move(waits_for));
  }
  return edges;
}

/// Depth-first search; every back edge closes one cycle, listed from its first section back to it.
class cycle_finder {
public:
  explicit cycle_finder(const dependency_graph& edges)
      : edges_(edges), state_(edges.size(), state::unvisited) {}

  std::vector<std::vector<std::size_t>> find() {
    for (std::size_t node = 0; node < edges_.size(); ++node) {
      if (state_[node] == state::unvisited)
        visit(node);
    }
    return std::move(cycles_);
  }

private:
  enum class state { unvisited, on_path, done };

  void visit(std::size_t node) {
    state_[node] = state::on_path;
    path_.push_back(node);
    for (const std::size_t next : edges_[node]) {
      if (state_[next] == state::on_path) {
        std::vector<std::size_t> cycle(std::find(path_.begin(), path_.end(), next), path_.end());
        cycle.push_back(next);
        cycles_.push_back(std::move(cycle));
      } else if (state_[next] == state::unvisited) {
        visit(next);
      }
    }
    path_.pop_back();
    state_[node] = state::done;
  }

  const dependency_graph& edges_;
  std::vector<state> state_;
  std::vector<std::size_t> path_;
  std::vector<std::vector<std::size_t>> cycles_;
};

/// Every section once, each after what it waits for; among the ready ones the earliest in route
/// order goes first. The graph has no cycle.
std::vector<std::size_t> resolve_order(const dependency_graph& edges) {
  std::vector<std::size_t> order;
  std::vector<bool> placed(edges.size(), false);
  const auto is_ready = [&](std::size_t node) {
    return !placed[node] && std::all_of(edges[node].begin(), edges[node].end(),
                                        [&](std::size_t d) { return placed[d]; });
  };
  while (order.size() < edges.size()) {
    std::size_t node = 0;
    while (!is_ready(node))
      ++node;
    placed[node] = true;
    order.push_back(node);
  }
  return order;
}

/// Whether data projected to `kept` can still hold a scalar at `field` (empty `kept` keeps all).
bool projection_keeps_value(const std::vector<field_path>& kept, const field_path& field) {
  return kept.empty() || std::any_of(kept.begin(), kept.end(),
                                     [&](const field_path& k) { return is_prefix(k, field); });
}

/// Whether data projected to `kept` can still hold anything at `field`: fallback_from may also
/// read an object that keeps only some of its members.
bool projection_keeps_anything(const std::vector<field_path>& kept, const field_path& field) {
  return projection_keeps_value(kept, field) ||
         std::any_of(kept.begin(), kept.end(),
                     [&](const field_path& k) { return is_prefix(field, k); });
}

std::string dotted(const std::string& section, const field_path& field) {
  return field.empty() ? section : section + "." + join(field, ".");
}

/// References to fields that the referenced section's own `fields` drops could never resolve.
void check_projected_references(const std::vector<section_config>& sections,
                                const std::string& sections_path, problem_list& problems) {
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const section_config& section = sections[i];
    const std::string path = element_path(sections_path, i);
    for (const url_part& part : section.url.parts) {
      if (part.what == url_part::kind::section &&
          !projection_keeps_value(sections[part.section].fields, part.field))
        problems.add(member_path(path, "url"), placeholder_text(dotted(part.text, part.field)) +
                                                   " reads a field that " + part.text +
                                                   "'s \"fields\" leaves out");
    }
    const std::optional<field_ref>& from = section.fallback_from;
    if (from && !projection_keeps_anything(sections[from->section].fields, from->field)) {
      const std::string& target = sections[from->section].name;
      problems.add(member_path(path, "fallback_from"), in_quotes(dotted(target, from->field)) +
                                                           " reads a field that " + target +
                                                           "'s \"fields\" leaves out");
    }
  }
}

/// Reports dependency cycles, or fills the route's resolve order when there is none.
void order_sections(route_config& route, const std::string& sections_path, problem_list& problems) {
  const dependency_graph edges = dependency_edges(route.sections);
  const std::vector<std::vector<std::size_t>> cycles = cycle_finder(edges).find();
  for (const std::vector<std::size_t>& cycle : cycles) {
    std::vector<std::string> names;
    for (const std::size_t node : cycle)
      names.push_back(route.sections[node].name);
    problems.add(sections_path, "dependency cycle: " + join(names, " -> "));
  }
  if (cycles.empty())
    route.resolve_order = resolve_order(edges);
}

void read_sections(const object_reader& route_object, const json* sections, bool route_path_valid,
                   route_config& route) {
  const std::string path = route_object.path_of("sections");
  if (!sections->is_array() || sections->empty()) {
    route_object.problem("sections", "must be a non-empty array of sections");
    return;
  }
  const std::map<std::string, std::size_t> names = section_names(*sections);
  for (std::size_t i = 0; i < sections->size(); ++i) {
    const std::string section_path = element_path(path, i);
    if (!(*sections)[i].is_object()) {
      route_object.problems().add(section_path, "must be an object");
      route.sections.emplace_back();
      continue;
    }
    const object_reader section((*sections)[i], section_path, route_object.problems());
    route.sections.push_back(read_section(section, i, route, route_path_valid, names));
  }
  check_projected_references(route.sections, path, route_object.problems());
  order_sections(route, path, route_object.problems());
}

// ---------------------------------------------------------------------------------------------
// Batches, routes, cluster

batch_config read_batch(const object_reader& batch, const route_config& route,
                        bool route_path_valid) {
  batch.reject_unknown_keys({"url", "max_items", "concurrency", "timeout_ms", "retry",
                             "deadline_ms", "fields", "forward_headers"});
  batch_config out;
  out.url =
      read_url(batch, template_scope{route_path_valid ? &route : nullptr, nullptr, std::nullopt});
  const bool has_item =
      std::any_of(out.url.parts.begin(), out.url.parts.end(),
                  [](const url_part& part) { return part.what == url_part::kind::item; });
  if (!out.url.source.empty() && !has_item)
    batch.problem("url", "must contain {item}");
  batch.read_integer("max_items", 1, 100000, out.max_items);
  batch.read_integer("concurrency", 1, 10000, out.concurrency);
  batch.read_required_millis("timeout_ms", 1, max_timeout_ms, out.timeout);
  out.retry = read_retry(batch);
  batch.read_millis("deadline_ms", 1, 3600000, out.deadline);
  out.fields = read_fields(batch);
  out.forward_headers = read_forward_headers(batch);
  return out;
}

/// A route as read, and whether its path is valid (only then is it compared with the others).
struct read_route_result {
  route_config route;
  bool path_valid = false;
};

read_route_result read_route(const object_reader& route) {
  route.reject_unknown_keys({"path", "deadline_ms", "sections", "batch"});
  read_route_result result;
  route_config& out = result.route;
  result.path_valid = read_route_path(route, out);
  const json* sections = route.find("sections");
  const bool has_sections = sections != nullptr;
  const bool has_batch = route.find("batch") != nullptr;
  if (has_sections && has_batch)
    route.problems().add(route.path(),
                         "has both \"sections\" and \"batch\" (a route is one or the other)");
  else if (!has_sections && !has_batch)
    route.problems().add(route.path(),
                         "needs \"sections\" (an aggregate route) or \"batch\" (a batch route)");
  if (has_batch && route.find("deadline_ms"))
    route.problem("deadline_ms",
                  "not allowed beside \"batch\" (a batch route's deadline is batch.deadline_ms)");
  else
    route.read_millis("deadline_ms", 1, max_timeout_ms, out.deadline);
  if (has_batch && has_capture(out, "item"))
    route.problem("path",
                  "capture {item} is not allowed in a batch route ({item} is the batch item)");
  if (has_sections)
    read_sections(route, sections, result.path_valid, out);
  if (const auto batch = route.read_object("batch"))
    out.batch = read_batch(*batch, out, result.path_valid);
  return result;
}

/// Reports each route that overlaps an earlier one, on the later route's path.
void check_overlaps(const std::vector<read_route_result>& routes, const std::string& routes_path,
                    problem_list& problems) {
  for (std::size_t later = 0; later < routes.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (routes[later].path_valid && routes[earlier].path_valid &&
          overlap(routes[earlier].route, routes[later].route))
        problems.add(member_path(element_path(routes_path, later), "path"),
                     "overlaps routes[" + std::to_string(earlier) + "].path " +
                         in_quotes(routes[earlier].route.path));
    }
  }
}

std::vector<route_config> read_routes(const object_reader& top) {
  const std::string expected = "a non-empty array of routes";
  if (!top.require("routes", expected))
    return {};
  const json& routes = *top.find("routes");
  if (!routes.is_array() || routes.empty()) {
    top.problem("routes", "must be " + expected);
    return {};
  }
  std::vector<read_route_result> results;
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const std::string path = element_path(top.path_of("routes"), i);
    if (routes[i].is_object()) {
      results.push_back(read_route(object_reader(routes[i], path, top.problems())));
    } else {
      top.problems().add(path, "must be an object");
      results.emplace_back();
    }
  }
  check_overlaps(results, top.path_of("routes"), top.problems());
  std::vector<route_config> out;
  for (read_route_result& result : results)
    out.push_back(std::move(result.route));
  return out;
}

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
       "keep_alive_idle_ms", "tls", "$schema"});
  read_listen(top, out.listen);
  top.read_integer("io_threads", 1, 64, out.io_threads);
  read_inbound_limits(top, out.inbound);
  if (const auto tls = top.read_object("tls")) {
    tls->reject_unknown_keys({"cert_file", "key_file"});
    out.tls.emplace();
    for (auto [key, file] : {std::pair{"cert_file", &out.tls->cert_file}, {"key_file", &out.tls->key_file}}) {
      if (!tls->require(key, "a file name"))
        continue;
      if (auto name = tls->read_string(key, "a non-empty file name"); name && !name->empty())
        *file = *name;
      else if (name)
        tls->problem(key, "must be a non-empty file name");
    }
  }
  top.read_integer("max_inflight", 1, 1000000, out.max_inflight);
  top.read_integer("max_body_bytes", 1, max_size_bytes, out.max_body_bytes);
  top.read_integer("max_response_bytes", 1, max_size_bytes, out.max_response_bytes);
  top.read_integer("cache_max_entries", 1, 100000000, out.cache_max_entries);
  top.read_integer("cache_max_bytes", 1024, 68719476736, out.cache_max_bytes);
  out.routes = read_routes(top);
  if (const auto cluster = top.read_object("cluster")) {
    cluster->reject_unknown_keys({"nodes", "local"});
    out.cluster.emplace();
    out.cluster->nodes = read_nodes(*cluster);
    cluster->read_bool("local", out.cluster->local);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Host and port

bool is_host_name_char(char c) {
  return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_';
}

bool is_ipv6_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

/// A host name or IPv4 address, or an IPv6 address in brackets (returned without them).
std::optional<std::string> parse_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    const std::string_view address = host.substr(1, host.size() - 2);
    if (std::all_of(address.begin(), address.end(), is_ipv6_char))
      return std::string(address);
    return std::nullopt;
  }
  if (!host.empty() && std::all_of(host.begin(), host.end(), is_host_name_char))
    return std::string(host);
  return std::nullopt;
}

std::optional<int> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), is_digit))
    return std::nullopt;
  const int port = std::stoi(std::string(text));
  if (port > 65535)
    return std::nullopt;
  return port;
}

std::optional<std::string> read_whole_file(const std::string& file_path, std::string& error) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(file_path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buffer[65536];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get()))
    text.append(buffer, n);
  if (std::ferror(file.get())) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return text;
}

} // namespace

config_result load_config(std::string_view json_text) {
  problem_list problems;
  const std::optional<json> document = parse_document(json_text, problems);
  if (!document)
    return {std::nullopt, problems.take()};
  config loaded = read_config(*document, problems);
  if (!problems.empty())
    return {std::nullopt, problems.take()};
  return {std::move(loaded), {}};
}

config_result load_config_file(const std::string& file_path) {
  std::string error;
  const std::optional<std::string> text = read_whole_file(file_path, error);
  if (!text)
    return {std::nullopt, {file_path + ": cannot read the file: " + error}};
  return load_config(*text);
}

std::optional<std::pair<std::string, int>> split_host_port(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  const std::optional<std::string> host = parse_host(text.substr(0, colon));
  const std::optional<int> port = parse_port(text.substr(colon + 1));
  if (!host || !port)
    return std::nullopt;
  return std::make_pair(*host, *port);
}

} // namespace gather
