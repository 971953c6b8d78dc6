#include "gather/answer/progressive_answer.hpp"

#include <algorithm>

#include "gather/answer/aggregate_response.hpp"
#include "shaped_answer.hpp"

namespace gather {

std::string frame_event(answer_format format, std::string_view event, std::string_view line) {
  std::string out;
  if (format == answer_format::sse) {
    out.reserve(line.size() + event.size() + 16);
    out += "event: ";
    out += event;
    out += "\ndata: ";
    out += line;
    out += "\n\n";
  } else {
    out.reserve(line.size() + 1);
    out += line;
    out += '\n';
  }
  return out;
}

void flatten_json(std::string& text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
}

progressive_answer::progressive_answer(const route_config& route, answer_format format)
  : route_(route), format_(format), data_(route.sections.size()), out_(route.sections.size(), false) {}

bool progressive_answer::try_resolve(std::size_t i, std::vector<section_outcome>& outcomes) {
  const auto& section = route_.sections[i];
  const auto& outcome = outcomes[i];
  const bool shows_fallback = outcome.status != section_status::ok && outcome.source != data_source::stale;
  if (shows_fallback && section.fallback_from && !out_[section.fallback_from->section])
    return false;
  data_[i] = section_data_text(route_, i, outcomes[i], data_);
  out_[i] = true;
  return true;
}

std::vector<std::string> progressive_answer::ended(std::size_t i, std::vector<section_outcome>& outcomes) {
  std::vector<std::string> events;
  const auto emit = [&](std::size_t s) {
    const auto& outcome = outcomes[s];
    std::string data = data_[s];
    flatten_json(data);
    // Section names are [a-z][a-z0-9_]* and the rest are numbers and fixed words: no escaping.
    std::string line = "{\"section\":\"" + route_.sections[s].name + "\",\"status\":\"" +
                       to_string(outcome.status) + "\",\"source\":\"" + to_string(outcome.source) +
                       "\",\"attempts\":" + std::to_string(outcome.attempts) +
                       ",\"ms\":" + std::to_string(outcome.ms) + ",\"data\":" + data + "}";
    events.push_back(frame_event(format_, "section", line));
  };
  if (i >= out_.size() || out_[i])
    return events;
  if (!try_resolve(i, outcomes)) {
    held_.push_back(i);
    return events;
  }
  emit(i);
  // What waited for this section's data may go now (and what waited for that, in turn).
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (try_resolve(*it, outcomes)) {
        emit(*it);
        held_.erase(it);
        progressed = true;
        break;
      }
    }
  }
  return events;
}

std::string progressive_answer::done(const std::vector<section_outcome>& outcomes,
                                     const std::string& request_id) const {
  // request_id is [A-Za-z0-9._-]{1,64} (docs/api.md#headers): no escaping.
  std::string line = "{\"done\":true," + degraded_and_warnings(route_, outcomes) +
                     ",\"request_id\":\"" + request_id + '"';
  if (route_.shape) {
    // The page's own object, rendered from what the section lines showed.
    const auto text_of = [&](std::size_t i) { return std::string_view{data_[i]}; };
    std::string data;
    piece_writer out{data, shape_bytes(*route_.shape, text_of) + 1};
    put_shape(out, *route_.shape, text_of);
    out.put('}');
    out.finish();
    flatten_json(data);
    line += ",\"data\":";
    line += data;
  }
  line += '}';
  return frame_event(format_, "done", line);
}

std::string batch_row_event(answer_format format, std::size_t index, const std::string& item,
                            const section_outcome& call) {
  std::string line = "{\"index\":" + std::to_string(index) + ",\"item\":" + item + ",\"status\":\"" +
                     to_string(call.status) + '"';
  if (call.status == section_status::ok) {
    std::string data = call.data;
    flatten_json(data);
    line += ",\"data\":" + data;
  }
  line += ",\"attempts\":" + std::to_string(call.attempts) + "}";
  return frame_event(format, "row", line);
}

std::string batch_done_event(answer_format format, const batch_counts& counts, std::size_t rows) {
  return frame_event(format, "done",
                     "{\"done\":true,\"counts\":{\"ok\":" + std::to_string(counts.ok) +
                         ",\"timeout\":" + std::to_string(counts.timeout) +
                         ",\"error\":" + std::to_string(counts.error) +
                         ",\"rejected\":" + std::to_string(counts.rejected) +
                         "},\"degraded\":" + (counts.ok == rows ? "false}" : "true}"));
}

} // namespace gather
