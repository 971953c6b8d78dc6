// Which downstream calls a batch makes: one per distinct rendered URL, however many items render it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/batch_item.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

struct batch_plan {
  std::vector<std::string> rows;         ///< each item as JSON text, in the order sent
  std::vector<std::size_t> call_of_row;  ///< the call whose outcome each row shows
  std::vector<std::string> urls;         ///< one per call, in order of first appearance
};

/// Renders `batch.url` for every item (captures, query and headers read from `in`) and gives items
/// that render the same URL one call. Calls are numbered in item order, so starting them in order
/// serves the rows in order.
batch_plan plan_batch(std::vector<batch_item> items, const batch_config& batch,
                      const inbound_request& in);

} // namespace gather
