#include "gather/values/answer_format.hpp"

namespace gather {

const char* media_type(answer_format format) {
  switch (format) {
    case answer_format::ndjson: return "application/x-ndjson";
    case answer_format::sse: return "text/event-stream";
    case answer_format::json: break;
  }
  return "application/json";
}

const char* to_string(answer_format format) {
  switch (format) {
    case answer_format::ndjson: return "ndjson";
    case answer_format::sse: return "sse";
    case answer_format::json: break;
  }
  return "json";
}

} // namespace gather
