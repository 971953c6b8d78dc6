// The answer of a batch route (docs/api.md#batch-routes-post), once every call has an outcome.
#pragma once

#include <cstddef>
#include <vector>

#include "gather/downstream/answer/batch_plan.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// Rows (not calls) by status: items that shared a call count once each.
struct batch_counts {
  std::size_t ok = 0;
  std::size_t timeout = 0;
  std::size_t error = 0;
  std::size_t rejected = 0;
};

batch_counts count_rows(const batch_plan& plan, const std::vector<section_outcome>& calls);

/// 200 with one row per item in item order: the item as sent, its call's status and attempts, and
/// its call's data on ok rows, spliced as validated JSON text (rows sharing a call splice the same
/// text); then `counts` and `degraded` (some row is not ok).
http_reply build_batch_reply(const batch_plan& plan, const std::vector<section_outcome>& calls);

} // namespace gather
