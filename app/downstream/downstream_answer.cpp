#include "gather/downstream/downstream_answer.hpp"

#include <algorithm>
#include <string_view>

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

/// Parses an already validated body into a DOM that holds only what `fields` can reach: the objects
/// on each path and the whole value at its end. Everything else is lexed but never built (a 200 KiB
/// body with two small fields kept cost 5-6 ms of CPU as a full DOM, mostly malloc, map inserts and
/// destruction: docs/performance.md). project_fields gives the same result on it as on the full DOM.
nlohmann::json parse_reachable(std::string_view body, const std::vector<field_path>& fields) {
  std::vector<char> kinds;        // kinds[l]: 'o' or 'a', the container at nesting level l
  std::vector<std::string> keys;  // keys[l]: the current key in the object at level l
  // A position inside `depth` containers is reachable when, for some path, every level the path
  // covers is an object whose current key is the path's key (below the path's end, anything goes).
  auto reachable = [&](std::size_t depth) {
    for (const auto& path : fields) {
      const auto covered = std::min(path.size(), depth);
      bool match = true;
      for (std::size_t l = 0; match && l < covered; ++l)
        match = kinds[l] == 'o' && keys[l] == path[l];
      if (match)
        return true;
    }
    return false;
  };
  using event = nlohmann::json::parse_event_t;
  auto keep = [&](int depth_in, event ev, nlohmann::json& parsed) {
    const auto depth = static_cast<std::size_t>(depth_in);
    switch (ev) {
      case event::object_start:
      case event::array_start: {
        const bool kept = depth == 0 || reachable(depth);
        kinds.resize(depth);
        kinds.push_back(ev == event::object_start ? 'o' : 'a');
        keys.resize(depth + 1);
        return kept;
      }
      case event::key:
        keys[depth - 1] = parsed.get_ref<const std::string&>();
        return reachable(depth);
      default: // values, and the ends of containers (false there would discard a kept container)
        return true;
    }
  };
  return nlohmann::json::parse(body.begin(), body.end(), keep);
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

std::string_view without_bom(std::string_view body) {
  // A UTF-8 byte order mark would be invalid in the middle of the response we splice the body into.
  if (body.size() >= 3 && body.substr(0, 3) == "\xEF\xBB\xBF")
    body.remove_prefix(3);
  return body;
}

} // namespace

section_outcome outcome_of(answer_verdict&& verdict) {
  section_outcome outcome;
  outcome.status = verdict.status;
  outcome.last_http = verdict.http_status;
  outcome.detail = std::move(verdict.detail);
  if (verdict.status == section_status::ok)
    outcome.data = std::move(verdict.data);
  return outcome;
}

nlohmann::json project_fields(const nlohmann::json& value, const std::vector<field_path>& fields) {
  auto out = nlohmann::json::object();
  if (!value.is_object())
    return out;
  for (const auto& path : fields) {
    const auto* found = find_field(value, path);
    if (!found)
      continue;
    auto* target = &out;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
      auto& next = (*target)[path[i]];
      if (!next.is_object())
        next = nlohmann::json::object();
      target = &next;
    }
    (*target)[path.back()] = *found;
  }
  return out;
}

answer_verdict classify_answer(transfer_result&& result, const std::vector<field_path>& fields) {
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
  auto body = without_bom(result.body);
  depth_limited_validator validator;
  bool valid = nlohmann::json::sax_parse(body.begin(), body.end(), &validator);
  if (validator.too_deep)
    return failed(section_status::error, false, http, "json_too_deep");
  if (!valid)
    return failed(section_status::error, false, http, "invalid_json");
  if (validator.top_level_null)
    return failed(section_status::error, false, http, "json_null");
  answer_verdict v;
  v.status = section_status::ok;
  v.http_status = http;
  if (!fields.empty())
    v.data = project_fields(parse_reachable(body, fields), fields).dump();
  else if (body.size() == result.body.size())
    v.data = std::move(result.body); // validated: spliced into the response as sent, not copied
  else
    v.data.assign(body.begin(), body.end());
  return v;
}

} // namespace gather
