// Checks across a route's sections: fields left out by a projection, dependency cycles, the
// resolve order.

#include "config_reader.hpp"

namespace gather::config_reader {

namespace {

bool is_prefix(const field_path& prefix, const field_path& path) {
  return prefix.size() <= path.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

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

} // namespace

void check_projected_references(const std::vector<section_config>& sections,
                                const std::string& sections_path, problem_list& problems) {
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const section_config& section = sections[i];
    const std::string path = element_path(sections_path, i);
    const auto check_parts = [&](const url_template& tpl, const std::string& where) {
      for (const url_part& part : tpl.parts) {
        if (part.what == url_part::kind::section &&
            !projection_keeps_value(sections[part.section].fields, part.field))
          problems.add(where, placeholder_text(dotted(part.text, part.field)) +
                                  " reads a field that " + part.text + "'s \"fields\" leaves out");
      }
    };
    check_parts(section.url, member_path(path, "url"));
    if (section.grpc)
      for (const message_placeholder& placeholder : section.grpc->placeholders)
        check_parts(placeholder.text, member_path(path, "grpc.message"));
    const std::optional<field_ref>& from = section.fallback_from;
    if (from && !projection_keeps_anything(sections[from->section].fields, from->field)) {
      const std::string& target = sections[from->section].name;
      problems.add(member_path(path, "fallback_from"), in_quotes(dotted(target, from->field)) +
                                                           " reads a field that " + target +
                                                           "'s \"fields\" leaves out");
    }
  }
}

void check_warning_codes(const std::vector<section_config>& sections,
                         const std::string& sections_path, problem_list& problems) {
  // The statuses a section can end with other than ok (section_status in gather/values).
  constexpr std::string_view not_ok[] = {"timeout", "error", "rejected", "skipped"};
  // Each code a section may stand for in `warnings`, and the first section that does.
  std::map<std::string, std::size_t> owner;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].warning.empty())
      for (const std::string_view status : not_ok)
        owner.emplace(sections[i].name + "_" + std::string(status), i);
  }
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::string& code = sections[i].warning;
    if (code.empty())
      continue;
    const auto [it, fresh] = owner.emplace(code, i);
    if (!fresh)
      problems.add(member_path(element_path(sections_path, i), "warning"),
                   in_quotes(code) + " is already the code of sections[" +
                       std::to_string(it->second) + "] (" + sections[it->second].name + ")");
  }
}

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

} // namespace gather::config_reader
