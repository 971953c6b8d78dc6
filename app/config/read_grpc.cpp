// Reading a section's (or a batch's) `grpc` object and the top-level `protos`: what can be checked
// without the descriptors. Whether the method exists, its kind and whether the message fits its
// input type are checked once `protos` is compiled (build_proto_catalog, app/downstream/).

#include "config_reader.hpp"
#include "gather/config/port.hpp"

namespace gather::config_reader {

namespace {

bool is_identifier(std::string_view text) {
  return !text.empty() && (is_alpha(text[0]) || text[0] == '_') &&
         std::all_of(text.begin(), text.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

/// `package.Service/Method`: dotted identifiers, a slash, an identifier.
bool read_method(const object_reader& grpc, grpc_call_config& out) {
  const std::string expected = "a string \"package.Service/Method\"";
  if (!grpc.require("method", expected))
    return false;
  const auto text = grpc.read_string("method", expected);
  if (!text)
    return false;
  const auto slash = text->find('/');
  const std::string_view service =
      slash == std::string::npos ? std::string_view{} : std::string_view(*text).substr(0, slash);
  const std::string_view method =
      slash == std::string::npos ? std::string_view{} : std::string_view(*text).substr(slash + 1);
  const auto pieces = split(service, '.');
  if (service.empty() || !is_identifier(method) ||
      !std::all_of(pieces.begin(), pieces.end(), is_identifier)) {
    grpc.problem("method", "must be " + expected + " (dotted names, one slash)");
    return false;
  }
  out.service = std::string(service);
  out.method = std::string(method);
  return true;
}

/// [a-z][a-z0-9-]*, at most 63 characters: an upstream's name (docs/upstreams.md).
bool could_name_upstream(const std::string& host) {
  return !host.empty() && host.size() <= 63 && host[0] >= 'a' && host[0] <= 'z' &&
         std::all_of(host.begin(), host.end(), [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-'; });
}

/// `http://host:port` or `https://host:port`: an origin, nothing after it, the port written (or
/// an upstream's name, without a port).
void read_target(const object_reader& grpc, grpc_call_config& out) {
  const std::string expected = "\"http://host:port\" or \"https://host:port\"";
  if (!grpc.require("target", "a string " + expected))
    return;
  const auto text = grpc.read_string("target", "a string " + expected);
  if (!text)
    return;
  auto problems = url_prefix_problems(*text);
  const std::size_t scheme_end = text->find("://");
  if (problems.empty()) {
    const std::string authority = text->substr(scheme_end + 3);
    const auto bracket = authority.rfind(']');
    const auto colon = authority.rfind(':');
    if (authority.find_first_of("/?#@") != std::string::npos)
      problems.push_back("must be an origin only (no path, query or user)");
    else if ((colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) &&
             !could_name_upstream(authority))
      problems.push_back("must name its port (" + expected + ")");
    // (A target without a port that could be an upstream's name is checked once the upstreams
    // are read: check_upstream_users.)
  }
  for (const auto& problem : problems)
    grpc.problem("target", problem);
  if (problems.empty())
    out.target = *text;
}

/// "~" and "/" escaped as a JSON pointer's reference token needs (RFC 6901).
std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

/// A list of non-empty strings; problems by element.
std::vector<std::string> read_names(const object_reader& object, std::string_view key,
                                    const std::string& what) {
  std::vector<std::string> out;
  const json* value = object.find(key);
  if (!value)
    return out;
  if (!value->is_array()) {
    object.problem(key, "must be an array of " + what);
    return out;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& name = (*value)[i];
    if (name.is_string() && !name.get_ref<const std::string&>().empty())
      out.push_back(name.get<std::string>());
    else
      object.problems().add(element_path(object.path_of(key), i), "must be a non-empty " + what);
  }
  return out;
}

} // namespace

void collect_placeholders(const json& value, const std::string& pointer, const std::string& path,
                          const template_scope& scope, problem_list& problems,
                          std::vector<message_placeholder>& out) {
  if (value.is_object()) {
    for (const auto& [key, member] : value.items())
      collect_placeholders(member, pointer + "/" + pointer_token(key), member_path(path, key), scope,
                           problems, out);
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i)
      collect_placeholders(value[i], pointer + "/" + std::to_string(i), element_path(path, i), scope,
                           problems, out);
  } else if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text.find_first_of("{}") == std::string::npos)
      return;
    std::vector<std::string> errors;
    auto parsed = parse_template_text(text, scope, errors);
    for (const auto& error : errors)
      problems.add(path, error);
    if (!errors.empty())
      return;
    const bool whole = parsed.parts.size() == 1 && parsed.parts[0].what != url_part::kind::literal;
    out.push_back(message_placeholder{pointer, std::move(parsed), whole});
  }
}

std::optional<grpc_call_config> read_grpc(const object_reader& parent, const template_scope& scope) {
  const auto grpc = parent.read_object("grpc");
  if (!grpc)
    return std::nullopt;
  grpc->reject_unknown_keys({"target", "method", "message", "max_messages", "reflection"});
  grpc_call_config out;
  read_target(*grpc, out);
  read_method(*grpc, out);
  if (const json* message = grpc->find("message")) {
    if (scope.write && message->is_string() && *message == "{body}") { // the whole body is the message
      out.message = *message;
      collect_placeholders(*message, "", grpc->path_of("message"), scope, grpc->problems(),
                           out.placeholders);
    } else if (!message->is_object()) {
      grpc->problem("message", scope.write ? "must be a JSON object (the request message in the proto3 JSON mapping) or \"{body}\""
                                           : "must be a JSON object (the request message in the proto3 JSON mapping)");
    } else {
      out.message = *message;
      collect_placeholders(*message, "", grpc->path_of("message"), scope, grpc->problems(),
                           out.placeholders);
    }
  }
  grpc->read_integer("max_messages", 1, 10000, out.max_messages);
  grpc->read_bool("reflection", out.reflection);
  return out;
}

void read_protos(const object_reader& top, protos_config& out) {
  const auto protos = top.read_object("protos");
  if (!protos)
    return;
  protos->reject_unknown_keys({"descriptor_sets", "files", "import_paths", "reflection"});
  out.descriptor_sets = read_names(*protos, "descriptor_sets", "file name");
  out.files = read_names(*protos, "files", ".proto file name");
  out.import_paths = read_names(*protos, "import_paths", "directory");
  if (!protos->find("files") && protos->find("import_paths"))
    protos->problem("import_paths", "only with \"files\" (the .proto files found under them)");
  if (const auto reflection = protos->read_object("reflection")) {
    reflection->reject_unknown_keys({"timeout_ms", "max_bytes", "max_calls", "pace_ms", "start_wait_ms"});
    auto& limits = out.reflection;
    reflection->read_millis("timeout_ms", 1, 600000, limits.call_timeout);
    reflection->read_integer("max_bytes", 1, 1073741824, limits.max_bytes);
    reflection->read_integer("max_calls", 1, 10000, limits.max_calls);
    reflection->read_millis("pace_ms", 1, 3600000, limits.pace);
    reflection->read_millis("start_wait_ms", 0, 600000, limits.start_wait);
  }
}

void add_message_dependencies(const grpc_call_config& grpc, std::vector<std::size_t>& out) {
  for (const auto& placeholder : grpc.placeholders)
    for (const auto& part : placeholder.text.parts)
      if (part.what == url_part::kind::section && !contains(out, part.section))
        out.push_back(part.section);
  std::sort(out.begin(), out.end());
}

} // namespace gather::config_reader
