#include "gather/answer/aggregate_response.hpp"

#include <optional>
#include <string_view>

#include "gather/answer/json_member.hpp"
#include "piece_writer.hpp"
#include "shaped_answer.hpp"
#include "gather/downstream/grpc/grpc_wire.hpp"
#include "gather/answer/write_answer.hpp"

namespace gather {

namespace {

/// What a section that did not end ok shows: a field of the data `from` shows (the text of the
/// section its fallback_from names; empty without one), else its fallback, else null. The field's
/// bytes are found in the text, not parsed (json_member.hpp).
std::string fallback_text(const section_config& section, std::string_view from) {
  if (section.fallback_from && !from.empty() && from != "null") {
    if (auto text = find_member(from, section.fallback_from->field))
      return std::string(*text);
  }
  if (section.fallback)
    return section.fallback->dump();
  return "null";
}

/// Shows its own data: ok, or a stale cache entry that stood in for the fallback.
bool shows_own_data(const section_outcome& outcome) {
  return outcome.status == section_status::ok || outcome.source == data_source::stale;
}

/// The most a status or source word takes (to_string of section_status, data_source).
constexpr std::size_t max_word = 16;

/// The most put_degraded_and_warnings writes.
std::size_t degraded_and_warnings_bytes(const route_config& route) {
  std::size_t most = 32;
  for (const auto& section : route.sections)
    most += std::max(section.warning.size(), section.name.size() + max_word) + 4;
  return most;
}

void put_degraded_and_warnings(piece_writer& out, const route_config& route,
                               const std::vector<section_outcome>& outcomes) {
  bool degraded = false;
  for (const auto& outcome : outcomes)
    degraded = degraded || outcome.status != section_status::ok;
  out.put(degraded ? std::string_view{"\"degraded\":true,\"warnings\":["}
                   : std::string_view{"\"degraded\":false,\"warnings\":["});
  bool first = true;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].status == section_status::ok)
      continue;
    if (!first)
      out.put(',');
    // Names and codes are [a-z][a-z0-9_]* (the config's rule): no escaping.
    out.put('"');
    const auto& section = route.sections[i];
    if (section.warning.empty()) {
      out.put(section.name);
      out.put('_');
      out.put(to_string(outcomes[i].status));
    } else {
      out.put(section.warning);
    }
    out.put('"');
    first = false;
  }
  out.put(']');
}

} // namespace

std::string section_data_text(const route_config& route, std::size_t i, section_outcome& outcome,
                              const std::vector<std::string>& data) {
  if (shows_own_data(outcome))
    return outcome.data;
  outcome.source = data_source::fallback;
  const auto& section = route.sections[i];
  return fallback_text(section, section.fallback_from ? std::string_view{data[section.fallback_from->section]}
                                                      : std::string_view{});
}

std::string degraded_and_warnings(const route_config& route, const std::vector<section_outcome>& outcomes) {
  std::string text;
  piece_writer out{text, degraded_and_warnings_bytes(route)};
  put_degraded_and_warnings(out, route, outcomes);
  out.finish();
  return text;
}

http_reply required_section_failure(const section_outcome& outcome, const std::string& section,
                                    const std::string& request_id) {
  if (outcome.grpc_code >= 0) { // a gRPC section: NOT_FOUND 404, DEADLINE_EXCEEDED 504, the rest 503
    const auto failure = grpc::required_failure_of(outcome.status, outcome.grpc_code);
    return error_reply(failure.http_status, failure.error, request_id, section);
  }
  if (outcome.status == section_status::timeout)
    return error_reply(504, "upstream_timeout", request_id, section);
  if (outcome.status == section_status::error && outcome.last_http == 404)
    return error_reply(404, "not_found", request_id, section);
  return error_reply(503, "upstream_unavailable", request_id, section);
}

http_reply build_aggregate_reply(const route_config& route, std::vector<section_outcome>& outcomes,
                                 const std::string& request_id) {
  const auto n = route.sections.size();
  int status = 200;
  if (route.has_write) { // it ran first: its end decides before the reads that waited for it
    const auto& write = outcomes.back();
    if (write.status != section_status::ok)
      return write_failure_reply(route.sections.back(), write, request_id);
    bool no_body = false;
    status = write_answer_status(route, write, no_body);
    if (no_body) {
      http_reply reply;
      reply.status = 204;
      return reply;
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (route.sections[i].required && outcomes[i].status != section_status::ok)
      return required_section_failure(outcomes[i], route.sections[i].name, request_id);

  // What each section shows: a view of its own data (not a copy), or of its fallback's text,
  // kept beside it. Sized once: no view is left pointing into a moved string.
  struct shown {
    std::string_view text;
    std::string fallback;
  };
  std::vector<shown> shows(n);
  for (auto i : route.resolve_order) {
    auto& outcome = outcomes[i];
    if (shows_own_data(outcome)) {
      shows[i].text = outcome.data;
      continue;
    }
    outcome.source = data_source::fallback;
    const auto& section = route.sections[i];
    shows[i].fallback = fallback_text(
      section, section.fallback_from ? shows[section.fallback_from->section].text : std::string_view{});
    shows[i].text = shows[i].fallback;
  }

  http_reply reply;
  reply.status = status;
  if (route.shape) {
    const auto text_of = [&](std::size_t i) { return shows[i].text; };
    piece_writer out{reply.body, shape_bytes(*route.shape, text_of) + 2 + degraded_and_warnings_bytes(route)};
    put_shape(out, *route.shape, text_of);
    if (route.shape->has_members)
      out.put(',');
    put_degraded_and_warnings(out, route, outcomes);
    out.put('}');
    out.finish();
    return reply;
  }

  // Spliced, not re-serialized: live data is validated JSON as the downstream sent it. Section
  // names are [a-z][a-z0-9_]* (the config's rule) and the rest are numbers and fixed words: no
  // escaping. Per section at most: `,"NAME":DATA` and
  // `,"NAME":{"status":"WORD","source":"WORD","attempts":N,"ms":N}`: 51 bytes of punctuation and
  // keys besides the names, the words, the numbers and the data.
  std::size_t most = 32 + degraded_and_warnings_bytes(route);
  for (std::size_t i = 0; i < n; ++i)
    most += 2 * route.sections[i].name.size() + shows[i].text.size() + 52 + 2 * max_word +
            2 * piece_writer::max_digits;
  piece_writer out{reply.body, most};
  out.put("{\"data\":{");
  for (std::size_t i = 0; i < n; ++i) {
    out.put(i == 0 ? std::string_view{"\""} : std::string_view{",\""});
    out.put(route.sections[i].name);
    out.put("\":");
    out.put(shows[i].text);
  }
  out.put("},\"sections\":{");
  for (std::size_t i = 0; i < n; ++i) {
    const auto& outcome = outcomes[i];
    out.put(i == 0 ? std::string_view{"\""} : std::string_view{",\""});
    out.put(route.sections[i].name);
    out.put("\":{\"status\":\"");
    out.put(to_string(outcome.status));
    out.put("\",\"source\":\"");
    out.put(to_string(outcome.source));
    out.put("\",\"attempts\":");
    out.number(outcome.attempts);
    out.put(",\"ms\":");
    out.number(outcome.ms);
    out.put('}');
  }
  out.put("},");
  put_degraded_and_warnings(out, route, outcomes);
  out.put('}');
  out.finish();
  return reply;
}

} // namespace gather
