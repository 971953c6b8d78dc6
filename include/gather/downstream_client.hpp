// The downstream HTTP client: libcurl's multi interface driven by one dedicated I/O thread.
//
// Nothing waits on a thread per call: thousands of transfers are in flight on the one I/O thread,
// each with its own timeout. Submissions and cancellations go through a mutex-protected queue and
// wake the loop with curl_multi_wakeup(). Completions run on the I/O thread and must be quick and
// non-blocking (in Gather they only send an actor message).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gather {

struct transfer_request {
  std::string url;
  std::vector<std::string> headers; ///< "Name: value" lines
  std::chrono::milliseconds timeout{1000}; ///< whole transfer: connect, send, receive
  std::size_t max_body_bytes = 8 * 1024 * 1024;
};

enum class transfer_error {
  none,      ///< an HTTP response arrived (any status); see http_status
  timeout,   ///< `timeout` passed before the response was complete
  connect,   ///< could not connect, connection reset, empty reply, DNS failure, TLS failure
  too_large, ///< the body exceeded max_body_bytes
  protocol,  ///< anything else curl reports (malformed response, ...)
};

struct transfer_result {
  transfer_error error = transfer_error::none;
  long http_status = 0; ///< 0 when no response status was received
  std::string body;
  std::string detail; ///< curl's error text: for logs only, never for responses
};

class downstream_client {
public:
  using completion = std::function<void(transfer_result&&)>;

  downstream_client();
  ~downstream_client(); ///< cancels whatever is in flight (no completions run) and joins the thread
  downstream_client(const downstream_client&) = delete;
  downstream_client& operator=(const downstream_client&) = delete;

  /// Starts a transfer; thread-safe. Returns its id (never 0). `done` runs exactly once on the I/O
  /// thread, unless cancel() is called first.
  std::uint64_t submit(transfer_request request, completion done);

  /// Cancels a transfer; thread-safe, idempotent, unknown ids are ignored. Once the I/O thread
  /// takes the cancellation the connection is closed and `done` never runs; a completion already
  /// under way may still run.
  void cancel(std::uint64_t id);

  /// Transfers submitted and not yet completed or cancelled.
  std::size_t inflight() const;

  /// Submissions and cancellations waiting for the I/O thread to take them: the depth of the
  /// queue between the actors and the curl loop (it stays near 0 unless that thread falls behind).
  std::size_t queued() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
