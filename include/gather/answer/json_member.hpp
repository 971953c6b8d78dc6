// Finding a field in JSON text that is known to be valid (a section's validated data, a fallback
// the configuration holds), without building it: the answer splices the field's bytes as they are.
#pragma once

#include <optional>
#include <string_view>

#include "gather/config/config.hpp"

namespace gather {

/// The text of the value at `path` inside `json` (valid JSON text), or nullopt when a step of the
/// path is not an object or lacks the key. Keys compare as JSON reads them (escapes decoded); of a
/// key written twice, the last one counts, as a parser keeping one of them would. An empty path is
/// all of `json`, surrounding whitespace left out. Text that is not valid JSON gives nullopt or
/// some span of it, never a read past its end.
std::optional<std::string_view> find_member(std::string_view json, const field_path& path);

} // namespace gather
