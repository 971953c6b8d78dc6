// Turning what a downstream sent into a section's status and data.
#pragma once

#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// JSON nested deeper than this is an `error` (docs/api.md#section-statuses).
constexpr int max_json_depth = 512;

struct answer_verdict {
  section_status status = section_status::error;
  bool retryable = false; ///< timeout, connection error, 429, 502, 503, 504
  std::string data;       ///< serialized JSON (ok only), projected by `fields`
  int http_status = 0;
  int grpc_code = -1;     ///< a gRPC call's status code; -1 for an HTTP call
  std::string detail;     ///< private reason for the log
  /// A gRPC call made on a cluster node that ended OK: its messages as they came, undecoded (the
  /// node has no descriptors; the gateway makes `data` of them). Empty otherwise.
  std::vector<std::string> messages;
  /// A refused write with pass_errors: the JSON object its answer's `detail` shows; else empty.
  std::string passed;
  std::string endpoint; ///< the upstream's endpoint the call went to ("address:port"); else empty
};

/// A refused write's error body is passed on only when it is a JSON object of at most this many
/// bytes as received (docs/api.md#write-routes: the contract's bound, not a setting).
constexpr std::size_t max_passed_error_bytes = 4096;

/// Classifies one attempt: 2xx with a JSON body that is not `null` is ok; everything else (a
/// timeout, a connection failure, any non-2xx including 3xx, a body that is not JSON or nests deeper
/// than max_json_depth, JSON null) is timeout or error. Takes the body over when it is kept as sent.
/// Ok data is projected by `fields`, then cut to its first `max_items` elements when it is an
/// array (0: all).
answer_verdict classify_answer(transfer_result&& result, const std::vector<field_path>& fields,
                               std::size_t max_items = 0);

/// A write's answer: as classify_answer, but a 2xx without a body is ok with `null` data, and
/// with `pass_errors` a non-2xx whose body is a JSON object of at most max_passed_error_bytes
/// keeps it (re-serialized) in `passed`.
answer_verdict classify_write_answer(transfer_result&& result, const std::vector<field_path>& fields,
                                     std::size_t max_items, bool pass_errors);

/// The verdict as a section outcome: status, last HTTP status, private detail, and data when ok.
section_outcome outcome_of(answer_verdict&& verdict);

/// Keeps only `fields` of `value` (docs/config.md#fields): where a path meets an array, the rest
/// of the path applies to each element (an element that is not an object becomes `{}`); absent
/// paths, and objects on a path that hold none of it, are left out; a scalar projects to `{}`.
nlohmann::json project_fields(const nlohmann::json& value, const std::vector<field_path>& fields);

/// Validated JSON text as a section shows it: projected by `fields` (empty: all of it), and when
/// it is an array, cut to its first `max_items` elements (0: all). Re-serialized.
std::string project_text(std::string_view body, const std::vector<field_path>& fields,
                         std::size_t max_items);

} // namespace gather
