// gRPC over HTTP/2 as the gateway speaks it (docs/grpc.md; the protocol is
// grpc/grpc doc/PROTOCOL-HTTP2.md): the 5-byte length-prefixed messages, `grpc-timeout`, the
// status a call ends with and what it means for a section. Pure functions and one small reader:
// no sockets, no threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather::grpc {

/// The status codes (grpc/grpc doc/statuscodes.md).
enum code : int {
  ok = 0, cancelled = 1, unknown = 2, invalid_argument = 3, deadline_exceeded = 4, not_found = 5,
  already_exists = 6, permission_denied = 7, resource_exhausted = 8, failed_precondition = 9,
  aborted = 10, out_of_range = 11, unimplemented = 12, internal = 13, unavailable = 14,
  data_loss = 15, unauthenticated = 16,
};

/// "OK", "NOT_FOUND", ...; "UNKNOWN" for a number that names no code (gRPC clients read it so).
const char* code_name(int code);

/// `message` with its 5-byte prefix: flag 0 (not compressed), its length big-endian.
std::string frame(std::string_view message);

/// Reassembles length-prefixed messages from DATA chunks cut anywhere. A compressed message (the
/// gateway never asks for compression), a flag other than 0 or 1, one message over
/// `max_message_bytes` or more than `max_total_bytes` in all is an error, found from its prefix
/// before its bytes are held.
class frame_reader {
public:
  frame_reader(std::size_t max_message_bytes, std::size_t max_total_bytes)
      : max_message_(max_message_bytes), max_total_(max_total_bytes) {}

  /// Takes one chunk; each message it completes is appended to `messages`. False once the stream
  /// is broken (then error() says why and nothing more is read).
  bool feed(std::string_view chunk, std::vector<std::string>& messages);
  /// Whether part of a message (or of its prefix) is held: a stream that ends here was cut.
  bool inside_message() const { return have_ > 0 || reading_body_; }
  const std::string& error() const { return error_; }

private:
  bool start_message();

  std::size_t max_message_;
  std::size_t max_total_;
  std::size_t total_ = 0;
  unsigned char prefix_[5] = {};
  std::size_t have_ = 0;     ///< prefix bytes held
  bool reading_body_ = false;
  std::size_t length_ = 0;   ///< the current message's length
  std::string body_;
  std::string error_;
};

/// `grpc-timeout` for `timeout`: whole milliseconds ("300m"), at least 1; past 8 digits in a
/// coarser unit, rounded up (the header allows at most 8 digits).
std::string timeout_text(millis timeout);

/// `grpc-status`: a decimal number; nullopt for anything else.
std::optional<int> parse_status(std::string_view text);

/// `grpc-message` as sent: percent-encoded UTF-8. Decoded leniently: an escape that is not
/// "%XX" stays as written (decoders must not fail on it).
std::string decode_message(std::string_view text);

/// The code a client reads from an answer that is not gRPC: its HTTP status, as
/// grpc/grpc doc/http-grpc-status-mapping.md says (404 UNIMPLEMENTED, 503 UNAVAILABLE, ...).
int code_of_http_status(int http_status);

/// The section's status for a call that ended with `code`: OK ok, DEADLINE_EXCEEDED timeout,
/// every other code error.
section_status status_of(int code);

/// Whether a call that ended with `code` is tried again (retry): UNAVAILABLE,
/// RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED; never after another code.
bool retryable(int code);

/// What a required section that failed makes of the request: NOT_FOUND 404 `not_found`; a
/// DEADLINE_EXCEEDED or the section's own timeout 504 `upstream_timeout`; anything else 503
/// `upstream_unavailable`.
struct required_failure {
  int http_status;
  const char* error;
};
required_failure required_failure_of(section_status status, int code);

} // namespace gather::grpc
