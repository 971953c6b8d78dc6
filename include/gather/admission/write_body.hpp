// Reading a write route's body (docs/api.md#write-routes): one JSON object, parsed once at
// admission, refused with a reason fit for the client.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gather {

/// A body nested deeper than this is refused (as a downstream's answer is: docs/api.md).
constexpr std::size_t max_body_depth = 512;

/// The parsed body, or why it is refused (400 bad_request).
struct write_body {
  std::shared_ptr<const nlohmann::json> value;
  std::string problem; ///< empty when the body is valid; otherwise a reason fit for the client
};

/// Parses `text`: valid JSON (UTF-8 checked), an object at its top, no object with one key twice,
/// nested at most max_body_depth deep. The parser keeps its own stack: a deep body costs memory
/// (bounded by max_body_bytes), never the thread's stack.
write_body parse_write_body(std::string_view text);

/// Whether a Content-Type value names application/json (any case, parameters allowed).
bool is_json_media_type(std::string_view content_type);

} // namespace gather
