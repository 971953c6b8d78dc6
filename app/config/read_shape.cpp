// Reading a route's `shape`: the template of its answer, compiled once into literal JSON text and
// holes, so that an answer is the template's pieces and the sections' bytes spliced in turn.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

/// Keys the answer adds to the rendered template itself.
constexpr std::string_view answer_keys[] = {"degraded", "warnings"};

/// A string that is exactly `{s}` or `{s.a.b}` with `s` written as a section name is a hole;
/// any other string (other text around it, `{}`, `{Not a name}`, two placeholders such as
/// `{a.x} {a.y}`) is literal.
std::optional<field_path> placeholder_of(const std::string& text) {
  if (text.size() < 3 || text.front() != '{' || text.back() != '}')
    return std::nullopt;
  const std::string_view inside = std::string_view(text).substr(1, text.size() - 2);
  if (inside.find_first_of("{}") != std::string_view::npos)
    return std::nullopt;
  std::optional<field_path> path = parse_dotted(inside);
  if (!path || !is_section_name(path->front()))
    return std::nullopt;
  return path;
}

/// Compiles a template read as `Json` (nlohmann::json, whose objects are sorted by key, for the
/// checks; nlohmann::ordered_json for the answer, whose members stand in the order written).
template <class Json> class shape_compiler {
public:
  shape_compiler(const route_config& route, problem_list& problems)
      : route_(route), problems_(problems) {
    out_.literals.emplace_back();
  }

  /// The template's outer object: its members, left open for the answer to close.
  shape_template compile(const Json& shape, const std::string& path) {
    literal("{");
    bool first = true;
    for (const auto& [key, value] : shape.items()) {
      if (contains(answer_keys, key))
        problems_.add(member_path(path, key), "the answer adds \"" + key +
                                                  "\" itself: a shape may not use it at its top level");
      member(key, value, path, first);
      first = false;
    }
    out_.has_members = !first;
    return std::move(out_);
  }

private:
  void literal(std::string_view text) { out_.literals.back() += text; }

  void member(const std::string& key, const Json& value, const std::string& path, bool first) {
    literal(first ? "" : ",");
    literal(json(key).dump());
    literal(":");
    value_of(value, member_path(path, key));
  }

  void value_of(const Json& value, const std::string& path) {
    if (value.is_object()) {
      literal("{");
      bool first = true;
      for (const auto& [key, member_value] : value.items()) {
        member(key, member_value, path, first);
        first = false;
      }
      literal("}");
    } else if (value.is_array()) {
      literal("[");
      for (std::size_t i = 0; i < value.size(); ++i) {
        literal(i == 0 ? "" : ",");
        value_of(value[i], element_path(path, i));
      }
      literal("]");
    } else if (value.is_string()) {
      string_of(value.template get_ref<const std::string&>(), path);
    } else {
      literal(value.dump());
    }
  }

  void string_of(const std::string& text, const std::string& path) {
    std::optional<field_path> placeholder = placeholder_of(text);
    if (!placeholder) {
      literal(json(text).dump());
      return;
    }
    const auto& sections = route_.sections;
    const auto named = std::find_if(sections.begin(), sections.end(), [&](const section_config& s) {
      return s.name == placeholder->front();
    });
    if (named == sections.end()) {
      problems_.add(path, in_quotes(text) + ": this route has no section " +
                              in_quotes(placeholder->front()));
      literal("null");
      return;
    }
    out_.holes.push_back(shape_hole{static_cast<std::size_t>(named - sections.begin()),
                                    field_path(placeholder->begin() + 1, placeholder->end())});
    out_.literals.emplace_back();
  }

  const route_config& route_;
  problem_list& problems_;
  shape_template out_;
};

} // namespace

std::optional<shape_template> read_shape(const object_reader& route, const route_config& out,
                                         bool is_batch) {
  const json* shape = route.find("shape");
  if (!shape)
    return std::nullopt;
  if (is_batch) {
    route.problem("shape", "only an aggregate route (\"sections\") has a shape");
    return std::nullopt;
  }
  if (!shape->is_object()) {
    route.problem("shape", "must be a JSON object: the template of the answer");
    return std::nullopt;
  }
  return shape_compiler<json>(out, route.problems()).compile(*shape, route.path_of("shape"));
}

shape_template compile_ordered_shape(const nlohmann::ordered_json& shape, const route_config& route) {
  problem_list ignored; // the same template, read once already: any problem was reported then
  return shape_compiler<nlohmann::ordered_json>(route, ignored).compile(shape, "shape");
}

} // namespace gather::config_reader
