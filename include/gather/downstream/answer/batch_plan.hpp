// Which downstream calls a batch makes: one per distinct rendered URL (a gRPC batch: per distinct
// rendered message), however many items render it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/batch_item.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

struct grpc_call_part;
struct proto_catalog;

struct batch_plan {
  std::vector<std::string> rows;         ///< each item as JSON text, in the order sent
  std::vector<std::size_t> call_of_row;  ///< the call whose outcome each row shows
  /// One per call, in order of first appearance: its URL; a gRPC batch's call key (target,
  /// method and rendered message).
  std::vector<std::string> urls;
  /// A gRPC batch's calls, one per call (empty for a URL batch): the message rendered and
  /// encoded, or null when it cannot be (`refused` says why: that call ends `error`, none made).
  std::vector<std::shared_ptr<const grpc_call_part>> grpc;
  std::vector<std::string> refused;
};

/// Renders `batch.url` (or a gRPC batch's message, with the method's plan in `catalog`'s
/// `batches[route]`) for every item (captures, query and headers read from `in`) and gives items
/// that render the same one call. Calls are numbered in item order, so starting them in order
/// serves the rows in order. A whole `{item}` in a message keeps the item's JSON type where its
/// field is not a string.
batch_plan plan_batch(std::vector<batch_item> items, const batch_config& batch,
                      const inbound_request& in, const std::shared_ptr<const proto_catalog>& catalog = nullptr,
                      std::size_t route = 0);

} // namespace gather
