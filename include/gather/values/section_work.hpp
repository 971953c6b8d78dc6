// One section's call, fully resolved: everything a worker needs to make its attempts, as plain
// values, so that it can run in this process or travel to a cluster node unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "gather/config/config.hpp"

namespace gather {

struct section_work {
  std::string url;                  ///< rendered and percent-encoded
  /// Its calls' header lines, "Name: value\r\n" each (downstream_header_lines); each call adds
  /// its deadline line.
  std::string header_lines;
  std::int64_t timeout_ms = 0;      ///< per attempt
  std::int32_t attempts = 1;        ///< retry policy
  std::int64_t backoff_ms = 0;
  double multiplier = 2.0;
  std::vector<field_path> fields; ///< projection, empty = everything
  std::uint64_t max_items = 0;    ///< an array's data keeps its first max_items elements; 0: all
  std::uint64_t max_response_bytes = 0;
  std::int64_t budget_ms = 0; ///< time left until the request's deadline when the work was sent
  /// Lower-case name of the header that tells each call how long it may take; empty: none.
  std::string deadline_header;
  bool http2 = false; ///< over HTTP/2 (transfer_request::http2)
  /// A gRPC section's call sent to a cluster node (`url` is its target): the method's path
  /// ("/package.Service/Method", empty for an HTTP section), the request message already encoded
  /// by the gateway, and how many messages a server stream may bring (0: unary). The node has no
  /// descriptors: it answers with the messages undecoded (section_outcome::messages).
  std::string grpc_path;
  std::string grpc_message;
  std::uint64_t grpc_max_messages = 0;
  /// A route's write (docs/api.md#write-routes): an HTTP write's method and body (its
  /// Content-Type is in `headers`); a 2xx without a body is `null` data; with `pass_errors` a
  /// refusal's JSON error object (or grpc-message) is kept for the client.
  std::string method; ///< empty: GET
  std::string body;
  bool write = false;
  bool pass_errors = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, section_work& x) {
  return f(caf::meta::type_name("gather.section_work"), x.url, x.header_lines, x.timeout_ms, x.attempts,
           x.backoff_ms, x.multiplier, x.fields, x.max_items, x.max_response_bytes, x.budget_ms,
           x.deadline_header, x.http2, x.grpc_path, x.grpc_message, x.grpc_max_messages, x.method,
           x.body, x.write, x.pass_errors);
}

/// The retry policy and timeout of `work` in the config's types.
inline retry_policy retry_of(const section_work& work) {
  return retry_policy{work.attempts, millis{work.backoff_ms}, work.multiplier};
}

} // namespace gather
