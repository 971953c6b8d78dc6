// What a gRPC call's answer comes to (docs/grpc.md): the response's head, its
// DATA chunks and its trailers as an HTTP/2 call delivers them, read into the status the call
// ended with and the messages it brought. A pure state machine (no socket, no clock): the HTTP/2
// call's event sink feeds it, and so can a test.
//
// The status: `grpc-status` from the trailers or from a Trailers-Only head; an answer that is not
// gRPC (an HTTP status other than 200, a content-type other than application/grpc..., no
// grpc-status) gets the one gRPC clients synthesize; how the stream ended otherwise gives
// DEADLINE_EXCEEDED (the call's timeout), UNAVAILABLE (no connection, a refused stream) or
// INTERNAL (a broken stream, a message over max_response_bytes, a compressed one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/downstream/grpc/grpc_wire.hpp"

namespace gather::grpc {

/// Header fields as the HTTP/2 client gives them (lower-case names, wire order).
using fields = std::vector<std::pair<std::string, std::string>>;

/// How the HTTP/2 stream ended, as far as the answer cares.
enum class stream_end_kind {
  complete,   ///< END_STREAM from the server
  stopped,    ///< the answer asked to stop (after max_messages, or a broken stream): RST_STREAM CANCEL
  timeout,    ///< the call's timeout passed
  unavailable,///< no connection, it broke, or the stream was refused
  reset,      ///< the server reset the stream (with `reset_code`)
  too_large,  ///< DATA over max_response_bytes
  protocol,   ///< a malformed answer
};

struct call_result {
  int code = unknown;              ///< the status the call ended with
  std::vector<std::string> messages; ///< the messages, serialized, in order
  bool cut = false;                ///< stopped after max_messages (code OK)
  int http_status = 0;             ///< the head's :status, 0 when none came
  std::string message;             ///< grpc-message, decoded (for the log only)
  std::string detail;              ///< what went wrong otherwise, in words (for the log only)
};

class answer_reader {
public:
  /// `max_messages`: 0 for a unary method (exactly one message), else a server stream's limit.
  answer_reader(std::size_t max_messages, std::size_t max_response_bytes)
      : max_messages_(max_messages), frames_(max_response_bytes, max_response_bytes) {}

  /// The response's first HEADERS; false: stop the call (not gRPC, or a Trailers-Only answer).
  bool on_head(int status, const fields& headers, bool ends_stream);
  /// One DATA chunk; false: stop the call (max_messages reached, or a broken stream).
  bool on_data(std::string_view chunk);
  void on_trailers(const fields& trailers);
  /// The stream's end: the result (call once).
  call_result finish(stream_end_kind how, std::uint32_t reset_code = 0, std::string detail = {});

private:
  void read_status(const fields& headers);
  void fail(int code, std::string detail);

  std::size_t max_messages_;
  frame_reader frames_;
  call_result result_;
  bool status_seen_ = false; ///< grpc-status came (trailers or Trailers-Only)
  bool failed_ = false;      ///< the answer itself decided the code (not gRPC, a broken frame)
};

/// The code a reset stream means (grpc/grpc doc/PROTOCOL-HTTP2.md): CANCEL CANCELLED,
/// REFUSED_STREAM UNAVAILABLE, ENHANCE_YOUR_CALM RESOURCE_EXHAUSTED, the rest INTERNAL.
int code_of_reset(std::uint32_t h2_error_code);

} // namespace gather::grpc
