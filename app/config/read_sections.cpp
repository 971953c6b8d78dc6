// Reading an aggregate route's `sections`, then the checks across them.

#include "config_reader.hpp"

#include <set>

namespace gather::config_reader {

namespace {

/// Names that would be read as `{query.q}`, `{header.h}` or `{item}` in a URL template.
constexpr std::string_view reserved_section_names[] = {"query", "header", "item", "claim", "body",
                                                       "client"};

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
            " is reserved: {query.q}, {header.h}, {claim.c}, {body.b}, {client.ip} and {item} mean something else in templates");
  else if (const std::size_t first = names.at(*name); first != index)
    section.problem("name", "duplicate section name " + in_quotes(*name) + " (also sections[" +
                                std::to_string(first) + "])");
}

/// `warning`: the section's code in `warnings`; empty when absent or (reported) invalid.
std::string read_warning(const object_reader& section) {
  const std::string expected = "a string matching [a-z][a-z0-9_]*";
  const std::optional<std::string> code = section.read_string("warning", expected);
  if (!code)
    return {};
  if (!is_section_name(*code)) {
    section.problem("warning", "must match [a-z][a-z0-9_]*");
    return {};
  }
  return *code;
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

/// A write's keys: a section's, less what would let it degrade, be cached or be sent twice.
void reject_write_keys(const object_reader& write) {
  write.reject_unknown_keys({"name", "url", "grpc", "timeout_ms", "forward_headers", "fields",
                             "idempotent", "pass_errors", "method", "body", "retry", "http2",
                             "max_concurrent", "circuit", "fallback", "fallback_from",
                             "cache_ttl_ms", "cache_shared", "hedge", "required"});
  static constexpr std::pair<std::string_view, std::string_view> refused[] = {
      {"fallback", "a write has no fallback: it is always required"},
      {"fallback_from", "a write has no fallback: it is always required"},
      {"cache_ttl_ms", "a write is never cached"},
      {"cache_shared", "a write is never cached"},
      {"hedge", "a write is never hedged (a second call could write twice)"},
  };
  for (const auto& [key, why] : refused)
    if (write.find(key))
      write.problem(key, std::string(why));
  if (const json* required = write.find("required"); required && *required != json(true))
    write.problem("required", "a write is always required (leave it out)");
}

/// What only a write has: `idempotent`, `pass_errors`, an HTTP write's `method` and `body`.
void read_write_keys(const object_reader& write, const template_scope& scope,
                     const route_config& route, section_config& out) {
  out.write = true;
  out.required = true;
  write.read_bool("idempotent", out.idempotent);
  write.read_bool("pass_errors", out.pass_errors);
  if (write.find("retry") && !out.idempotent)
    write.problem("retry", "a write is retried only with \"idempotent\": true (a retry could write twice)");
  if (out.grpc) {
    for (const char* key : {"method", "body"})
      if (write.find(key))
        write.problem(key, "only for an HTTP write (a gRPC write's request is its grpc.message)");
    return;
  }
  out.method = route.method;
  const std::string expected = "one of GET, POST, PUT, PATCH, DELETE";
  if (const auto method = write.read_string("method", "a string: " + expected)) {
    if (is_route_method(*method))
      out.method = *method;
    else
      write.problem("method", "must be " + expected);
  }
  if (const json* body = write.find("body")) {
    out.body = *body;
    collect_placeholders(*body, "", write.path_of("body"), scope, write.problems(),
                         out.body_placeholders);
  }
}

section_config read_section(const object_reader& section, std::size_t index,
                            const route_config& route, bool route_path_valid,
                            const std::map<std::string, std::size_t>& names, bool write) {
  if (write)
    reject_write_keys(section);
  else
    section.reject_unknown_keys({"name", "url", "timeout_ms", "required", "fallback", "fallback_from",
                                 "retry", "cache_ttl_ms", "stale_ttl_ms", "fields", "forward_headers",
                                 "hedge", "max_concurrent", "circuit", "grpc", "max_items",
                                 "warning", "cache_shared", "http2"});
  const template_scope scope{route_path_valid ? &route : nullptr, &names, index,
                             route.auth.has_value(), route.method != "GET", write};
  section_config out;
  read_section_name(section, index, names, out);
  if (section.find("grpc") && section.find("url"))
    section.problems().add(section.path(),
                           "has both \"url\" and \"grpc\" (a section calls one or the other)");
  else if (section.find("grpc"))
    out.grpc = read_grpc(section, scope);
  else
    out.url = read_url(section, scope);
  out.depends_on = url_dependencies(out.url);
  if (out.grpc)
    add_message_dependencies(*out.grpc, out.depends_on);
  section.read_required_millis("timeout_ms", 1, max_timeout_ms, out.timeout);
  section.read_bool("required", out.required);
  section.read_bool("http2", out.http2);
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
  section.read_bool("cache_shared", out.cache_shared);
  if (out.cache_shared && out.cache_ttl.count() == 0)
    section.problem("cache_shared", "needs cache_ttl_ms: only cached data is shared");
  out.fields = read_fields(section);
  out.forward_headers = read_forward_headers(section);
  read_resilience(section, out);
  section.read_integer("max_items", 1, 100000, out.max_items);
  out.warning = read_warning(section);
  if (write)
    read_write_keys(section, scope, route, out);
  else if (is_optional(section) && !section.find("fallback") && !section.find("fallback_from"))
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

} // namespace

void read_sections(const object_reader& route_object, const json* sections, const json* write,
                   bool route_path_valid, route_config& route) {
  const std::string path = route_object.path_of("sections");
  static const json no_sections = json::array();
  if (!sections) // a write route without reads
    sections = &no_sections;
  else if (!sections->is_array() || sections->empty()) {
    route_object.problem("sections", "must be a non-empty array of sections");
    return;
  }
  std::map<std::string, std::size_t> names = section_names(*sections);
  const std::size_t write_index = sections->size(); // the write is the last section
  if (write && write->is_object() && write->contains("name") && (*write)["name"].is_string()) {
    const auto [first, fresh] = names.emplace((*write)["name"].get<std::string>(), write_index);
    if (!fresh)
      route_object.problems().add(member_path(route_object.path_of("write"), "name"),
                                  "duplicate section name " + in_quotes(first->first) + " (also sections[" +
                                      std::to_string(first->second) + "])");
  }
  for (std::size_t i = 0; i < sections->size(); ++i) {
    const std::string section_path = element_path(path, i);
    if (!(*sections)[i].is_object()) {
      route_object.problems().add(section_path, "must be an object");
      route.sections.emplace_back();
      continue;
    }
    const object_reader section((*sections)[i], section_path, route_object.problems());
    route.sections.push_back(read_section(section, i, route, route_path_valid, names, false));
  }
  if (write) {
    if (!write->is_object()) {
      route_object.problem("write", "must be an object (a section: the downstream call the body goes to)");
    } else {
      const object_reader reader(*write, route_object.path_of("write"), route_object.problems());
      auto names_for_write = names;
      names_for_write[reader.find("name") && reader.find("name")->is_string()
                          ? reader.find("name")->get<std::string>() : std::string{}] = write_index;
      route.sections.push_back(read_section(reader, write_index, route, route_path_valid, names_for_write, true));
      route.has_write = true;
      for (std::size_t i = 0; i < write_index; ++i) // every read waits for the write
        if (!contains(route.sections[i].depends_on, write_index))
          route.sections[i].depends_on.push_back(write_index);
    }
  }
  check_projected_references(route.sections, path, route_object.problems());
  check_warning_codes(route.sections, path, route_object.problems());
  order_sections(route, path, route_object.problems());
}

} // namespace gather::config_reader
