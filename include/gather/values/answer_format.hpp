// How an answer's body is shaped: one JSON document, or a progressive answer whose parts leave as
// they are gathered (docs/api.md, "Progressive answers"). Chosen by the front from `Accept`.
#pragma once

#include <cstdint>

namespace gather {

enum class answer_format : std::uint8_t {
  json,   ///< application/json: the whole answer at once
  ndjson, ///< application/x-ndjson: one JSON object a line
  sse,    ///< text/event-stream: the same objects as Server-Sent Events
};

const char* media_type(answer_format format);
/// The label of gather_streamed_total's `format`: "ndjson", "sse" (or "json").
const char* to_string(answer_format format);

} // namespace gather
