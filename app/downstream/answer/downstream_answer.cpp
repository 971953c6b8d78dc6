#include "gather/downstream/answer/downstream_answer.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

#include <simdjson.h> // here only: a heavy header, and the one place a body is validated

#include "gather/config/url_template.hpp"

namespace gather {

namespace {

/// Validates a JSON text without building it, refusing nesting deeper than max_json_depth before
/// any DOM exists (a 100,000-level body must cost neither stack nor memory).
struct depth_limited_validator : nlohmann::json_sax<nlohmann::json> {
  int depth = 0;
  bool too_deep = false;
  bool top_level_null = false;
  bool seen_value = false;

  bool scalar() {
    seen_value = true;
    return true;
  }
  bool null() override {
    if (!seen_value && depth == 0)
      top_level_null = true;
    return scalar();
  }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool open() {
    seen_value = true;
    if (++depth > max_json_depth) {
      too_deep = true;
      return false;
    }
    return true;
  }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth, true; }
  bool end_array() override { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

static_assert(body_slack_bytes >= simdjson::SIMDJSON_PADDING,
              "the client must leave the room simdjson reads past a body's end");

/// What simdjson says of a body that is only validated and spliced.
enum class quick_verdict { valid, null, refused };

/// Bodies up to this size are validated by a parser kept per thread (its buffers, ~14 bytes per
/// byte of body, stay allocated for the next call); a larger one gets a parser of its own, freed
/// after it, so one big body never leaves megabytes behind on every loop.
constexpr std::size_t kept_parser_bytes = 256 * 1024;

/// Validates `text` from `from` with simdjson (at most max_json_depth levels, UTF-8 checked).
/// `refused` is not a reason: nlohmann decides why (or accepts what simdjson does not, such as an
/// integer beyond 64 bits, or objects nested exactly max_json_depth deep), so a body is refused
/// for the same reason whichever validator reads it first. Spare capacity after the text is grown
/// to simdjson's padding when the client did not leave it (a body the connection's end delimited).
quick_verdict quick_check(std::string& text, std::size_t from) {
  if (text.capacity() - text.size() < simdjson::SIMDJSON_PADDING)
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  const std::size_t length = text.size() - from;
  thread_local simdjson::dom::parser kept;
  std::optional<simdjson::dom::parser> own;
  simdjson::dom::parser* parser = &kept;
  if (length > kept_parser_bytes)
    parser = &own.emplace();
  if (parser->max_depth() != static_cast<std::size_t>(max_json_depth) &&
      parser->allocate(std::max<std::size_t>(length, 1), max_json_depth) != simdjson::SUCCESS)
    return quick_verdict::refused;
  simdjson::dom::element root;
  if (parser->parse(text.data() + from, length, false).get(root) != simdjson::SUCCESS)
    return quick_verdict::refused;
  return root.is_null() ? quick_verdict::null : quick_verdict::valid;
}

/// Parses an already validated body into a DOM that holds only what `fields` can reach: the objects
/// on each path (and the arrays met on the way, which take no step of a path: each of their
/// elements goes on with the same one) and the whole value at its end, and, when the body is an
/// array, only its first `max_items` elements (0: all). Everything else is lexed but never built
/// (a 200 KiB body with two small fields kept cost 5-6 ms of CPU as a full DOM, mostly malloc,
/// map inserts and destruction: docs/performance.md). project_fields gives the same result on it
/// as on the full DOM; empty `fields` keeps everything.
nlohmann::json parse_reachable(std::string_view body, const std::vector<field_path>& fields,
                               std::size_t max_items) {
  std::vector<char> kinds;        // kinds[l]: 'o' or 'a', the container at nesting level l
  std::vector<std::string> keys;  // keys[l]: the current key in the object at level l
  std::size_t top_elements = 0;   // elements of a top-level array met so far
  // A position inside `depth` containers is reachable when, for some path, the object levels
  // above it, in order, have the path's keys as their current keys, as far as the path goes
  // (below its end, anything goes).
  auto reachable = [&](std::size_t depth) {
    if (fields.empty())
      return true;
    for (const auto& path : fields) {
      std::size_t step = 0;
      bool match = true;
      for (std::size_t l = 0; match && l < depth && step < path.size(); ++l) {
        if (kinds[l] == 'o')
          match = keys[l] == path[step++];
      }
      if (match)
        return true;
    }
    return false;
  };
  // An element of a top-level array past max_items is never built.
  auto counted = [&](std::size_t depth) {
    return max_items == 0 || depth != 1 || kinds[0] != 'a' || ++top_elements <= max_items;
  };
  using event = nlohmann::json::parse_event_t;
  auto keep = [&](int depth_in, event ev, nlohmann::json& parsed) {
    const auto depth = static_cast<std::size_t>(depth_in);
    switch (ev) {
      case event::object_start:
      case event::array_start: {
        const bool kept = depth == 0 || (counted(depth) && reachable(depth));
        kinds.resize(depth);
        kinds.push_back(ev == event::object_start ? 'o' : 'a');
        keys.resize(depth + 1);
        return kept;
      }
      case event::key:
        keys[depth - 1] = parsed.get_ref<const std::string&>();
        return reachable(depth);
      case event::value:
        return counted(depth);
      default: // the ends of containers (false there would discard a kept container)
        return true;
    }
  };
  return nlohmann::json::parse(body.begin(), body.end(), keep);
}

/// `value` projected by the fields that share their first `at` steps (`paths`); nullopt when a
/// path cannot go on through it (a scalar before a path's end).
std::optional<nlohmann::json> project(const nlohmann::json& value,
                                      const std::vector<const field_path*>& paths, std::size_t at) {
  for (const auto* path : paths)
    if (path->size() == at)
      return value; // a path ends here: all of it
  if (value.is_array()) {
    auto out = nlohmann::json::array();
    for (const auto& element : value) {
      auto projected = project(element, paths, at);
      out.push_back(projected ? std::move(*projected) : nlohmann::json::object());
    }
    return out;
  }
  if (!value.is_object())
    return std::nullopt;
  auto out = nlohmann::json::object();
  std::vector<const field_path*> next;
  for (const auto* path : paths) {
    const auto& key = (*path)[at];
    if (out.contains(key))
      continue; // done with every path through this key
    const auto member = value.find(key);
    if (member == value.end())
      continue;
    next.clear();
    for (const auto* other : paths)
      if ((*other)[at] == key)
        next.push_back(other);
    auto projected = project(*member, next, at + 1);
    // An object that holds none of the paths is left out, as an absent field is; an array stays
    // (its elements' own projections say what they hold).
    if (projected && !(projected->is_object() && projected->empty() && member->is_object()))
      out[key] = std::move(*projected);
  }
  return out;
}

bool retryable_status(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

answer_verdict failed(section_status status, bool retryable, int http, std::string detail) {
  answer_verdict v;
  v.status = status;
  v.retryable = retryable;
  v.http_status = http;
  v.detail = std::move(detail);
  return v;
}

/// The length of a UTF-8 byte order mark at the body's start (0 or 3): it would be invalid in the
/// middle of the response the body is spliced into.
std::size_t bom_length(std::string_view body) {
  return body.size() >= 3 && body.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
}

/// Whether the body's first token opens an array (JSON whitespace skipped).
bool starts_array(std::string_view body, std::size_t from) {
  const auto at = body.find_first_not_of(" \t\r\n", from);
  return at != std::string_view::npos && body[at] == '[';
}

answer_verdict spliced(std::string&& body, std::size_t bom, int http) {
  answer_verdict v;
  v.status = section_status::ok;
  v.http_status = http;
  if (bom == 0)
    v.data = std::move(body); // validated: spliced into the response as sent, not copied
  else
    v.data.assign(body, bom, std::string::npos);
  return v;
}

} // namespace

section_outcome outcome_of(answer_verdict&& verdict) {
  section_outcome outcome;
  outcome.status = verdict.status;
  outcome.last_http = verdict.http_status;
  outcome.grpc_code = verdict.grpc_code;
  outcome.detail = std::move(verdict.detail);
  if (verdict.status == section_status::ok) {
    outcome.data = std::move(verdict.data);
    outcome.messages = std::move(verdict.messages);
  }
  outcome.passed = std::move(verdict.passed);
  outcome.endpoint = std::move(verdict.endpoint);
  return outcome;
}

answer_verdict classify_write_answer(transfer_result&& result, const std::vector<field_path>& fields,
                                     std::size_t max_items, bool pass_errors) {
  const auto http = static_cast<int>(result.http_status);
  if (result.error != transfer_error::none)
    return classify_answer(std::move(result), fields, max_items);
  if (http >= 200 && http <= 299 &&
      result.body.find_first_not_of(" \t\r\n") == std::string::npos) { // done, nothing to show
    answer_verdict v;
    v.status = section_status::ok;
    v.http_status = http;
    v.data = "null";
    return v;
  }
  std::string passed;
  if (pass_errors && (http < 200 || http > 299) && result.body.size() <= max_passed_error_bytes) {
    auto value = nlohmann::json::parse(result.body, nullptr, false);
    if (value.is_object() && result.body.find('\0') == std::string::npos)
      passed = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  auto v = classify_answer(std::move(result), fields, max_items);
  v.passed = std::move(passed);
  return v;
}

nlohmann::json project_fields(const nlohmann::json& value, const std::vector<field_path>& fields) {
  std::vector<const field_path*> paths;
  for (const auto& path : fields)
    paths.push_back(&path);
  auto projected = project(value, paths, 0);
  if (!projected)
    return nlohmann::json::object();
  return std::move(*projected);
}

std::string project_text(std::string_view body, const std::vector<field_path>& fields,
                         std::size_t max_items) {
  auto value = parse_reachable(body, fields, max_items);
  if (!fields.empty())
    value = project_fields(value, fields);
  return value.dump();
}

answer_verdict classify_answer(transfer_result&& result, const std::vector<field_path>& fields,
                               std::size_t max_items) {
  switch (result.error) {
    case transfer_error::none:
      break;
    case transfer_error::timeout:
      return failed(section_status::timeout, true, 0, "timeout: " + result.detail);
    case transfer_error::connect:
      return failed(section_status::error, true, 0, "connection: " + result.detail);
    case transfer_error::too_large:
      return failed(section_status::error, false, static_cast<int>(result.http_status),
                    "response_too_large");
    case transfer_error::protocol:
      return failed(section_status::error, false, static_cast<int>(result.http_status),
                    "protocol: " + result.detail);
  }
  const auto http = static_cast<int>(result.http_status);
  if (http < 200 || http > 299)
    return failed(section_status::error, retryable_status(http), http,
                  "http_status " + std::to_string(http));
  const auto bom = bom_length(result.body);
  // Spliced as sent when nothing is taken out of it: no fields, and no array to cut.
  const bool whole = fields.empty() && (max_items == 0 || !starts_array(result.body, bom));
  if (whole) { // only validated and spliced: simdjson first
    switch (quick_check(result.body, bom)) {
      case quick_verdict::valid:
        return spliced(std::move(result.body), bom, http);
      case quick_verdict::null:
        return failed(section_status::error, false, http, "json_null");
      case quick_verdict::refused:
        break; // nlohmann says why, below
    }
  }
  const auto body = std::string_view{result.body}.substr(bom);
  depth_limited_validator validator;
  bool valid = nlohmann::json::sax_parse(body.begin(), body.end(), &validator);
  if (validator.too_deep)
    return failed(section_status::error, false, http, "json_too_deep");
  // nlohmann's lexer ends a text at a NUL byte and skips a byte order mark of its own: a body
  // with either would be spliced with bytes that no JSON reader takes. Neither is JSON.
  if (!valid || body.find('\0') != std::string_view::npos || bom_length(body) != 0)
    return failed(section_status::error, false, http, "invalid_json");
  if (validator.top_level_null)
    return failed(section_status::error, false, http, "json_null");
  if (whole)
    return spliced(std::move(result.body), bom, http);
  answer_verdict v;
  v.status = section_status::ok;
  v.http_status = http;
  v.data = project_text(body, fields, max_items);
  return v;
}

} // namespace gather
