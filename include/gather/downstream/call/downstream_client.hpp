// The downstream HTTP client on the gateway's event loops: HTTP/1.1 over Boost.Beast, and HTTP/2
// over libnghttp2 (a transfer with `http2`, and calls whose answer arrives as events:
// stream_call.hpp, what gRPC is built on).
//
// Nothing waits on a thread per call: thousands of transfers are in flight on the loops, each with
// its own timeout, their sockets in the same epoll as the inbound connections. A transfer runs on
// one loop: the calling thread's own when it is one of the loops (it starts before submit
// returns), else one in turn, posted there. Cancellations are posted. Completions run on that loop's
// thread, never inside submit, and must be quick and non-blocking (in Gather they only send an
// actor message).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "gather/downstream/call/call_target.hpp"
#include "gather/downstream/call/url_split.hpp"
#include "gather/downstream/pool/origin_pool.hpp"
#include "gather/downstream/call/stream_call.hpp"

namespace gather {

struct transfer_request {
  std::string url;
  /// The call's header lines as they go on the wire, "Name: value\r\n" each (header_block() in
  /// downstream_request.hpp); the client adds Host, and Content-Length for a body.
  std::string header_lines;
  std::chrono::milliseconds timeout{1000}; ///< whole transfer: connect, send, receive
  std::size_t max_body_bytes = 8 * 1024 * 1024;
  /// When no answer is complete after `slow_after` (0: never; only if shorter than `timeout`),
  /// `slow` runs once on the loop and the transfer goes on: what a hedge waits for. It rides on the
  /// transfer's own timer, so a call that answers in time costs no extra timer or wake-up.
  std::chrono::microseconds slow_after{0};
  std::function<void()> slow{};
  std::string method = "GET";
  std::string body = {}; ///< with a Content-Length (any body, any method but GET); Content-Type in headers
  /// Over HTTP/2 (stream_call.hpp): h2c prior knowledge for http://, ALPN h2 for https:// (HTTP/1.1
  /// when the server does not choose h2). The result means what it means over HTTP/1.1.
  bool http2 = false;
  /// An upstream's endpoint (call_target.hpp): the machine the URL's host names; null: the URL's
  /// own origin.
  std::shared_ptr<const call_target> target{};
  /// The URL template's origin split when the configuration was read (url_split.hpp); null: the
  /// URL is split whole. Only the target is made from a URL that starts with it.
  std::shared_ptr<const split_origin> origin{};
};

enum class transfer_error {
  none,      ///< an HTTP response arrived (any status); see http_status
  timeout,   ///< `timeout` passed before the response was complete
  connect,   ///< could not connect, connection reset, empty reply, DNS failure, TLS failure
  too_large, ///< the body exceeded max_body_bytes
  protocol,  ///< a malformed response, or a URL that is not http(s)
};

/// Room the client reserves after a body (capacity, not content): the JSON validator
/// (downstream_answer.cpp) reads up to this far past a body's end, so a body read with a
/// Content-Length or chunked is validated where it lies, never copied.
constexpr std::size_t body_slack_bytes = 64;

struct transfer_result {
  transfer_error error = transfer_error::none;
  long http_status = 0; ///< 0 when no response status was received
  std::string body;     ///< with body_slack_bytes of spare capacity (not when the connection's end delimits it)
  std::string detail; ///< what went wrong, in words: for logs only, never for responses
};

class io_loops;

class downstream_client {
public:
  using completion = std::function<void(transfer_result&&)>;

  /// On `loops`, which must run while transfers are submitted and be stopped before this is
  /// destroyed; its pools within `bounds` (the config's downstream_idle_timeout_ms,
  /// downstream_drain_quiet_ms, downstream_alpn_memory_ms and downstream_max_idle_connections).
  explicit downstream_client(io_loops& loops, pool_bounds bounds = {});
  /// On one event loop of its own (a load generator, a tool).
  downstream_client();
  ~downstream_client(); ///< abandons whatever is in flight (no completions run)
  downstream_client(const downstream_client&) = delete;
  downstream_client& operator=(const downstream_client&) = delete;

  /// Starts a transfer; thread-safe. Returns its id (never 0). `done` runs exactly once on a loop's
  /// thread, after submit returns, unless cancel() is called first.
  std::uint64_t submit(transfer_request&& request, completion&& done);

  /// Starts an HTTP/2 call whose answer arrives as events (stream_call.hpp says which, when and on
  /// which thread); thread-safe. Returns its id (never 0), which cancel() takes.
  std::uint64_t call(stream_request request, std::shared_ptr<stream_events> events);

  /// Cancels a transfer or a call; thread-safe, idempotent, unknown ids are ignored. Once the loop
  /// takes the cancellation the connection is closed and `done` never runs; a completion already
  /// under way may still run.
  void cancel(std::uint64_t id);

  /// Transfers submitted and not yet completed or cancelled.
  std::size_t inflight() const;

  /// Submissions and cancellations posted and not yet taken by their loop: the depth of the queue
  /// between the actors and the event loops (near 0 unless a loop falls behind).
  std::size_t queued() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// "scheme://host:port" of a URL as the client reads it (the port made explicit, lower case);
/// nullopt when the client would refuse the URL.
std::optional<std::string> url_origin(const std::string& url);

} // namespace gather
