// Reading a batch request's body (docs/api.md#batch-routes-post): `{"items": [...]}` of strings and numbers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gather/values/batch_item.hpp"

namespace gather {

/// The items, or why the body is refused (400 bad_request).
struct batch_body {
  std::vector<batch_item> items;
  std::string problem; ///< empty when the body is valid; otherwise a reason fit for the client
};

/// Parses `body`. Keys other than `items` are ignored; `[]` is a valid empty batch. Refused: text
/// that is not JSON, JSON that is not an object, no `items`, `items` not an array, an item that is
/// not a string or a number (the reason names its index), more than `max_items` items.
batch_body parse_batch_body(std::string_view body, std::size_t max_items);

} // namespace gather
