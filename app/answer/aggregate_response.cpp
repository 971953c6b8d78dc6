#include "gather/answer/aggregate_response.hpp"

#include <optional>

#include "gather/config/url_template.hpp"

namespace gather {

namespace {

/// Data of section `from` as it appears in the response, field `path` of it, serialized.
std::optional<std::string> field_of(const std::string& data_text, const field_path& path) {
  if (data_text.empty() || data_text == "null")
    return std::nullopt;
  auto data = nlohmann::json::parse(data_text, nullptr, false);
  if (data.is_discarded())
    return std::nullopt;
  const auto* found = find_field(data, path);
  if (!found)
    return std::nullopt;
  return found->dump();
}

std::string fallback_text(const route_config& route, std::size_t i,
                          const std::vector<std::string>& data_texts) {
  const auto& section = route.sections[i];
  if (section.fallback_from) {
    if (auto text = field_of(data_texts[section.fallback_from->section], section.fallback_from->field))
      return *text;
  }
  if (section.fallback)
    return section.fallback->dump();
  return "null";
}

} // namespace

std::string section_data_text(const route_config& route, std::size_t i, section_outcome& outcome,
                              const std::vector<std::string>& data) {
  if (outcome.status == section_status::ok || outcome.source == data_source::stale)
    return outcome.data;
  outcome.source = data_source::fallback;
  return fallback_text(route, i, data);
}

namespace {

void append_degraded_and_warnings(std::string& out, const route_config& route,
                                  const std::vector<section_outcome>& outcomes) {
  bool degraded = false;
  for (const auto& outcome : outcomes)
    degraded = degraded || outcome.status != section_status::ok;
  out += degraded ? "\"degraded\":true,\"warnings\":[" : "\"degraded\":false,\"warnings\":[";
  bool first = true;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].status == section_status::ok)
      continue;
    out += first ? "\"" : ",\"";
    out += route.sections[i].name;
    out += '_';
    out += to_string(outcomes[i].status);
    out += '"';
    first = false;
  }
  out += ']';
}

} // namespace

std::string degraded_and_warnings(const route_config& route, const std::vector<section_outcome>& outcomes) {
  std::string out;
  out.reserve(40 + 32 * outcomes.size());
  append_degraded_and_warnings(out, route, outcomes);
  return out;
}

http_reply required_section_failure(const section_outcome& outcome, const std::string& section,
                                    const std::string& request_id) {
  if (outcome.status == section_status::timeout)
    return error_reply(504, "upstream_timeout", request_id, section);
  if (outcome.status == section_status::error && outcome.last_http == 404)
    return error_reply(404, "not_found", request_id, section);
  return error_reply(503, "upstream_unavailable", request_id, section);
}

http_reply build_aggregate_reply(const route_config& route, std::vector<section_outcome>& outcomes,
                                 const std::string& request_id) {
  const auto n = route.sections.size();
  for (std::size_t i = 0; i < n; ++i)
    if (route.sections[i].required && outcomes[i].status != section_status::ok)
      return required_section_failure(outcomes[i], route.sections[i].name, request_id);

  std::vector<std::string> data_texts(n);
  for (auto i : route.resolve_order)
    data_texts[i] = section_data_text(route, i, outcomes[i], data_texts);

  // Spliced, not re-serialized: live data is validated JSON as the downstream sent it. Both parts
  // are sized once up front (one allocation each instead of one per growth step).
  std::size_t data_bytes = 0, names_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    data_bytes += data_texts[i].size();
    names_bytes += route.sections[i].name.size();
  }
  std::string sections;
  sections.reserve(16 + names_bytes + 96 * n);
  std::string body;
  body.reserve(64 + data_bytes + 2 * names_bytes + 40 * n + sections.capacity());
  body += "{\"data\":{";
  sections += "\"sections\":{";
  for (std::size_t i = 0; i < n; ++i) {
    const auto& name = route.sections[i].name; // [a-z][a-z0-9_]*: needs no escaping
    const auto& outcome = outcomes[i];
    if (i != 0) {
      body += ',';
      sections += ',';
    }
    body += '"';
    body += name;
    body += "\":";
    body += data_texts[i];
    sections += '"';
    sections += name;
    sections += "\":{\"status\":\"";
    sections += to_string(outcome.status);
    sections += "\",\"source\":\"";
    sections += to_string(outcome.source);
    sections += "\",\"attempts\":";
    sections += std::to_string(outcome.attempts);
    sections += ",\"ms\":";
    sections += std::to_string(outcome.ms);
    sections += '}';
  }
  body += "},";
  body += sections;
  body += "},";
  append_degraded_and_warnings(body, route, outcomes);
  body += "}";
  http_reply reply;
  reply.body = std::move(body);
  return reply;
}

} // namespace gather
