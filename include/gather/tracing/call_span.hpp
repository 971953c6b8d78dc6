// The CLIENT span of one downstream call (a section's attempt, a batch call's attempt; later each
// hedge call): begun where the call is submitted, finished where its answer is classified.
//
// begin() gives the call's own copy of its headers a traceparent with a fresh span id: the
// request's trace, this call's span, the request's sampling flag. The request's traceparent is
// already in those headers (downstream_headers puts it there, with the request's SERVER span as
// its parent id), so this works wherever the call is made, a cluster node included; a node has no
// exporter, so its calls carry their own span ids but record nothing.
#pragma once

#include <cstdint>
#include <string>

#include "gather/tracing/span.hpp"
#include "gather/tracing/traceparent.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

class span_exporter;

class call_span {
public:
  call_span() = default; ///< no span: finish() does nothing

  /// `header_lines`: the call's own header lines ("Name: value\r\n" each); its traceparent line is
  /// rewritten.
  /// `name`: the section's name ("batch" for a batch call); `attempt`: 1 for the first.
  /// `written`: what that line says, when the caller wrote it (a gateway's worker: its request's
  /// trace), so that it is not parsed back, ~400 instructions a call; null: parsed (a node's call,
  /// whose line came from the gateway).
  static call_span begin(span_exporter* exporter, std::string& header_lines,
                         const std::string& name, std::int32_t attempt,
                         const traceparent* written = nullptr);

  /// A gRPC call: `path` is "/package.Service/Method" (the span gets rpc.system "grpc",
  /// rpc.service and rpc.method, and rpc.grpc.status_code when it finishes with a code).
  void rpc(const std::string& path);

  /// Records the span (when sampled and exported): the call's status and the HTTP status of its
  /// answer (0: none arrived), a gRPC call's status code (-1: none). Once only; later calls, and
  /// calls on an empty span, do nothing.
  void finish(section_status status, std::int32_t http_status, std::int32_t grpc_code = -1);
  /// The call was cancelled before it ended (the request was answered first).
  void cancel() { finish_as("cancelled", 0, -1, true); }

  bool started() const { return started_; }
  const span_id_hex& span_id() const { return record_.span_id; }

private:
  void finish_as(const char* status, std::int32_t http_status, std::int32_t grpc_code, bool failed);

  span_exporter* exporter_ = nullptr; ///< null: nothing is recorded
  span_record record_;
  std::string rpc_service_, rpc_method_; ///< a gRPC call's (recorded spans only)
  std::int32_t attempt_ = 0;
  bool started_ = false;
};

} // namespace gather
