// Reading what browser clients need: `cors` (which origins may call, what a preflight allows) and
// `compression` (which encodings, from what size).

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

bool is_scheme_char(char c) { return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.'; }

/// `scheme://host[:port]` as a browser serialises an Origin: no path, no trailing slash, no
/// user info. Returned lower-case (browsers send scheme and host lower-case).
std::optional<std::string> parse_origin(std::string_view text) {
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0 || !is_alpha(text[0]))
    return std::nullopt;
  const auto scheme = text.substr(0, scheme_end);
  if (!std::all_of(scheme.begin(), scheme.end(), is_scheme_char))
    return std::nullopt;
  const auto authority = text.substr(scheme_end + 3);
  if (authority.empty())
    return std::nullopt;
  // With a port the whole authority must split as host:port; without one it is a bare host.
  const auto colon = authority.rfind(':');
  const bool has_port = colon != std::string_view::npos && authority.back() != ']';
  if (has_port) {
    const auto parsed = split_host_port(authority);
    if (!parsed || parsed->second == 0)
      return std::nullopt;
  } else if (!split_host_port(std::string(authority) + ":1")) {
    return std::nullopt;
  }
  return lower_case(text);
}

/// An array of header names, stored lower-case (`lower`) or as written, without repeats.
std::vector<std::string> read_header_names(const object_reader& cors, std::string_view key, bool lower) {
  std::vector<std::string> names;
  const json* value = cors.find(key);
  if (!value)
    return names;
  if (!value->is_array()) {
    cors.problem(key, "must be an array of header names");
    return names;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& name = (*value)[i];
    // "*" is a token too, but a wildcard means something else to browsers (and nothing with
    // credentials): the names are listed.
    if (!name.is_string() || !is_token(name.get_ref<const std::string&>()) ||
        name.get_ref<const std::string&>() == "*") {
      cors.problems().add(element_path(cors.path_of(key), i),
                          "must be a header name (letters, digits and !#$%&'+-.^_`|~; no wildcard)");
      continue;
    }
    const auto& text = name.get_ref<const std::string&>();
    auto stored = lower ? lower_case(text) : text;
    const bool seen = std::any_of(names.begin(), names.end(), [&](const std::string& other) {
      return lower_case(other) == lower_case(stored);
    });
    if (!seen)
      names.push_back(std::move(stored));
  }
  return names;
}

void read_allow_origins(const object_reader& cors, cors_config& out) {
  const std::string expected =
      "a non-empty array of origins like \"https://shop.example.com\" (scheme://host[:port], no "
      "path), or [\"*\"] for any origin";
  if (!cors.require("allow_origins", expected))
    return;
  const json& value = *cors.find("allow_origins");
  if (!value.is_array() || value.empty()) {
    cors.problem("allow_origins", "must be " + expected);
    return;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string path = element_path(cors.path_of("allow_origins"), i);
    const json& origin = value[i];
    if (origin.is_string() && origin.get_ref<const std::string&>() == "*") {
      if (value.size() == 1)
        out.any_origin = true;
      else
        cors.problems().add(path, "\"*\" must stand alone (it already allows every origin)");
      continue;
    }
    const auto parsed =
        origin.is_string() ? parse_origin(origin.get_ref<const std::string&>()) : std::nullopt;
    if (!parsed)
      cors.problems().add(path, "must be an origin like \"https://shop.example.com\" "
                                "(scheme://host[:port], no path, no trailing slash) or \"*\"");
    else if (!contains(out.allow_origins, *parsed))
      out.allow_origins.push_back(*parsed);
  }
}

const char* coding_name(content_coding coding) { return coding == content_coding::br ? "br" : "gzip"; }

void read_encodings(const object_reader& compression, compression_config& out) {
  const json* value = compression.find("encodings");
  if (!value)
    return;
  const std::string expected = "a non-empty array of \"br\" and \"gzip\", in order of preference";
  if (!value->is_array() || value->empty()) {
    compression.problem("encodings", "must be " + expected);
    return;
  }
  std::vector<content_coding> encodings;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& name = (*value)[i];
    const std::string path = element_path(compression.path_of("encodings"), i);
    std::optional<content_coding> coding;
    if (name.is_string() && name.get_ref<const std::string&>() == "br")
      coding = content_coding::br;
    else if (name.is_string() && name.get_ref<const std::string&>() == "gzip")
      coding = content_coding::gzip;
    if (!coding)
      compression.problems().add(path, "must be \"br\" or \"gzip\"");
    else if (contains(encodings, *coding))
      compression.problems().add(path, in_quotes(coding_name(*coding)) + " is listed twice");
    else
      encodings.push_back(*coding);
  }
  if (!encodings.empty())
    out.encodings = std::move(encodings);
}

} // namespace

std::optional<cors_config> read_cors(const object_reader& top) {
  std::optional<cors_config> out;
  if (const auto cors = top.read_object("cors")) {
    cors->reject_unknown_keys(
        {"allow_origins", "allow_headers", "expose_headers", "max_age_s", "allow_credentials"});
    out.emplace();
    read_allow_origins(*cors, *out);
    out->allow_headers = read_header_names(*cors, "allow_headers", true);
    out->expose_headers = read_header_names(*cors, "expose_headers", false);
    cors->read_integer("max_age_s", 0, 86400, out->max_age_s);
    cors->read_bool("allow_credentials", out->allow_credentials);
    // The Fetch standard refuses `Access-Control-Allow-Origin: *` on a credentialed request: a
    // configuration that asks for both could never work in a browser.
    if (out->any_origin && out->allow_credentials)
      cors->problem("allow_credentials",
                    "must be false when allow_origins is [\"*\"] (list the origins to allow credentials)");
  }
  return out;
}

std::optional<compression_config> read_compression(const object_reader& top) {
  std::optional<compression_config> out;
  if (const auto compression = top.read_object("compression")) {
    compression->reject_unknown_keys({"min_bytes", "encodings", "gzip_level", "br_quality"});
    out.emplace();
    compression->read_integer("min_bytes", 0, 1073741824, out->min_bytes);
    read_encodings(*compression, *out);
    compression->read_integer("gzip_level", 1, 9, out->gzip_level);
    compression->read_integer("br_quality", 0, 11, out->br_quality);
  }
  return out;
}

} // namespace gather::config_reader
