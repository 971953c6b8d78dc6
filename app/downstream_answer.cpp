#include "gather/downstream_answer.hpp"

#include <string_view>

#include "gather/url_template.hpp"

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
    v.data = project_fields(nlohmann::json::parse(body.begin(), body.end()), fields).dump();
  else if (body.size() == result.body.size())
    v.data = std::move(result.body); // validated: spliced into the response as sent, not copied
  else
    v.data.assign(body.begin(), body.end());
  return v;
}

} // namespace gather
