// What happened to one section of one request: the value a worker answers its coordinator with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace gather {

enum class section_status : std::uint8_t { ok, timeout, error, rejected, skipped };
/// `stale`: a failed call's expired cache entry stood in for the fallback (stale-if-error).
enum class data_source : std::uint8_t { live, cache, fallback, stale };

/// Why a call was not made (the log's `not_made`): the bulkhead was full, the circuit open, or the
/// host's retry budget spent.
/// `bad_body`: a write's body could not be turned into its gRPC message.
enum class not_made_reason : std::uint8_t { none, max_concurrent, circuit_open, retry_budget, bad_body };

const char* to_string(section_status status);
const char* to_string(data_source source);
const char* to_string(not_made_reason why); ///< "" for none

struct section_outcome {
  section_status status = section_status::skipped;
  data_source source = data_source::live;
  std::int32_t attempts = 0;    ///< downstream calls started
  std::int64_t ms = 0;          ///< the section's whole time, backoff included
  std::string data;             ///< serialized JSON (status ok only; projection applied)
  std::int32_t last_http = 0;   ///< HTTP status of the last attempt, 0 if none arrived
  std::string detail;           ///< private reason, for the log only
  std::string node;             ///< the cluster node that made the calls; empty: this process
  std::int32_t hedges = 0;      ///< hedge calls made (counted in `attempts` too)
  not_made_reason not_made = not_made_reason::none;
  std::int32_t grpc_code = -1;  ///< a gRPC section's last status code (the log's "grpc"); -1: none
  /// A gRPC section run on a cluster node, status ok: the answer's messages as they came, which
  /// the gateway's worker decodes into `data` with its descriptors (empty once it did).
  std::vector<std::string> messages;
  /// A refused write with `pass_errors`: the JSON object its answer's `detail` shows (the
  /// downstream's error object, or `{"message": grpc-message}`); empty otherwise.
  std::string passed;
  /// A section calling an upstream: the endpoint its last call went to ("address:port", the
  /// log's "endpoint"); empty otherwise.
  std::string endpoint;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, section_outcome& x) {
  return f(caf::meta::type_name("gather.section_outcome"), x.status, x.source, x.attempts, x.ms,
           x.data, x.last_http, x.detail, x.node, x.hedges, x.not_made, x.grpc_code, x.messages, x.passed, x.endpoint);
}

} // namespace gather
