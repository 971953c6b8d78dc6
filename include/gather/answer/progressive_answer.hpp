// A progressive answer (docs/api.md, "Progressive answers"): the events of an aggregate or batch
// answer as its parts end, each framed as an NDJSON line or a Server-Sent Event. Protocol-free:
// what carries the bytes (HTTP/1.1 chunks, HTTP/2 DATA frames) is the front's business.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gather/answer/batch_response.hpp"
#include "gather/config/config.hpp"
#include "gather/values/answer_format.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// One event as the bytes of its format: `line\n` (NDJSON) or `event: NAME\ndata: line\n\n` (SSE).
/// `line` is one JSON object on one line.
std::string frame_event(answer_format format, std::string_view event, std::string_view line);

/// JSON text on one line: validated JSON holds CR and LF only as whitespace between tokens (never
/// inside a string, never between two tokens that need it), so they become spaces.
void flatten_json(std::string& text);

/// The section events of one aggregate request, in the order its sections end. A section that did
/// not end ok shows its fallback exactly as the whole answer would; one whose `fallback_from`
/// reads a section still running is held back until that section's event is out.
class progressive_answer {
public:
  progressive_answer(const route_config& route, answer_format format);

  /// Section `i` has ended with `outcomes[i]` (its `source` becomes `fallback` when its fallback
  /// shows). The framed events now complete, in order: usually its own, sometimes none (held
  /// back), sometimes also the ones that waited for it.
  std::vector<std::string> ended(std::size_t i, std::vector<section_outcome>& outcomes);

  /// The last event: `{"done": true, "degraded": ..., "warnings": [...], "request_id": ...}`, and
  /// on a route with `shape` the rendered template as `"data"`.
  std::string done(const std::vector<section_outcome>& outcomes, const std::string& request_id) const;

private:
  bool try_resolve(std::size_t i, std::vector<section_outcome>& outcomes);

  const route_config& route_;
  answer_format format_;
  std::vector<std::string> data_; ///< each section's data text once its event is out
  std::vector<bool> out_;         ///< its event has been produced
  std::vector<std::size_t> held_; ///< ended, waiting for the section their fallback reads
};

/// A batch row's event: `{"index": i, "item": ..., "status": ..., "data": ..., "attempts": n}`
/// (`data` on ok rows only, as in the whole answer).
std::string batch_row_event(answer_format format, std::size_t index, const std::string& item,
                            const section_outcome& call);
/// The batch's last event: `{"done": true, "counts": {...}, "degraded": ...}`.
std::string batch_done_event(answer_format format, const batch_counts& counts, std::size_t rows);

} // namespace gather
