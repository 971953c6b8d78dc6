// Reading the members sections and batches share: retry, fields, forward_headers.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

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

} // namespace

bool forwardable_header(std::string_view lower_name) {
  return !contains(unforwardable_headers, lower_name);
}

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
    if (!forwardable_header(lower))
      parent.problems().add(path, in_quotes(lower) + " is never forwarded (hop-by-hop or Host)");
    else if (!contains(headers, lower))
      headers.push_back(lower);
  }
  return headers;
}

} // namespace gather::config_reader
