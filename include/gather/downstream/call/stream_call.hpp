// A downstream call over HTTP/2 whose answer arrives as events, as it comes: what a gRPC call
// needs (the response's head, its DATA chunks as they arrive, its trailers, how it ended) and
// what a JSON section with "http2": true is built on (the client collects the events into a
// transfer_result for it). Started with downstream_client::call(), cancelled with
// downstream_client::cancel() like any transfer.
//
// The connection: `url`'s origin (scheme://host:port) over HTTP/2, prior knowledge (h2c) for
// http://, TLS with ALPN offering h2 for https:// (the certificate checked as for any https URL).
// One connection per origin and event loop carries many calls; a further one opens when the
// server's MAX_CONCURRENT_STREAMS is reached, streams the client reset counted for as long as
// their connection lives (link_machine.hpp). A stream the server refused before processing it
// (RST_STREAM REFUSED_STREAM, or above a GOAWAY's last stream id) is sent again, by the client
// itself, on another connection, at most `max_resends` times; the events never see it.
//
// Threads. call() and cancel() may be called from any thread. Every callback of stream_events
// runs on the event loop's thread that runs the call (the caller's own loop when call() was made
// on one of the loops, else one in turn), never inside call(), one at a time and in this order:
//
//   on_head      once, the response's first final HEADERS (:status 2xx..5xx; 1xx are skipped).
//                head.ends_stream: it carried END_STREAM (gRPC's Trailers-Only: grpc-status is
//                in head.headers, on_trailers never runs).
//   on_data      zero or more times, each DATA frame's payload as it was read (frame and gRPC
//                message boundaries are unrelated). Return false to stop the call: the client
//                sends RST_STREAM CANCEL and on_end follows with stream_ending::stopped (e.g.
//                after max_messages).
//   on_trailers  at most once, a HEADERS block after DATA (always with END_STREAM).
//   on_end       exactly once, last, unless cancel() was taken first: how the call ended. After
//                it the client holds no reference to the events object.
//
// on_head may also return false (stop at once). Callbacks must be quick and never block (post,
// or send an actor message). They may call downstream_client::cancel() (it is posted) and
// downstream_client::call()/submit() (the new call starts after the callback returns).
// Once the loop has taken a cancel(), no callback runs any more: the server sees RST_STREAM
// CANCEL.
//
// Bounds. `timeout` covers everything (connect, TLS, waiting for a stream slot, the answer, the
// trailers): when it passes the client sends RST_STREAM CANCEL and ends the call `timeout`.
// `max_response_bytes` bounds the DATA bytes of the call in all: one more byte ends it
// `too_large` (RST_STREAM CANCEL). The client buffers nothing of a call beyond the read that
// brought it: each chunk goes to on_data as it is read, and the stream's window is opened again
// only as chunks are delivered.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/values/h2_codes.hpp"

namespace gather {

struct call_target; // call_target.hpp

/// Header fields in wire order; names lower case (HTTP/2 requires it), no pseudo-headers.
using header_list = std::vector<std::pair<std::string, std::string>>;

struct stream_request {
  /// http(s)://host[:port]/path?query: the origin picks the connection, the rest is :path.
  std::string url;
  std::string method = "GET";
  /// Sent after the pseudo-headers, in this order (gRPC: te, content-type, grpc-timeout first,
  /// then metadata). Names must be lower case; connection-specific ones (connection, keep-alive,
  /// proxy-connection, transfer-encoding, upgrade, host) are refused (stream_ending::protocol).
  header_list headers;
  /// Sent as DATA with END_STREAM on the last frame; empty with GET/HEAD: END_STREAM on HEADERS.
  std::string body;
  std::chrono::milliseconds timeout{1000};
  std::size_t max_response_bytes = 8 * 1024 * 1024;
  /// When the call has not ended after `slow_after` (0: never; only if shorter than `timeout`),
  /// `slow` runs once on the loop and the call goes on (a hedge's trigger), on the call's timer.
  std::chrono::microseconds slow_after{0};
  std::function<void()> slow{};
  /// An upstream's endpoint (call_target.hpp): the machine the URL's host names; null: the URL's
  /// own origin.
  std::shared_ptr<const call_target> target{};
};

struct stream_head {
  int status = 0;       ///< :status
  header_list headers;  ///< every other field, lower case as received
  bool ends_stream = false; ///< END_STREAM came with it (Trailers-Only)
};

enum class stream_ending {
  complete,   ///< the server ended the stream (END_STREAM) after a head
  stopped,    ///< on_head/on_data returned false; RST_STREAM CANCEL was sent
  reset,      ///< the server reset the stream (reset_code: RST_STREAM's code), a head or not
  refused,    ///< the server refused it (REFUSED_STREAM, or GOAWAY) more than max_resends times;
              ///< nothing was processed (gRPC: UNAVAILABLE)
  connection, ///< no connection (DNS, connect, TLS, an https server whose ALPN chose no h2), or it
              ///< broke or was closed (GOAWAY with an error, EOF) with the stream open (reset_code:
              ///< the GOAWAY's code, if one came)
  timeout,    ///< stream_request::timeout passed; RST_STREAM CANCEL was sent
  too_large,  ///< DATA over max_response_bytes; RST_STREAM CANCEL was sent
  protocol,   ///< a bad request (URL, header names) or a malformed answer; the client reset it
};

struct stream_end {
  stream_ending how = stream_ending::complete;
  std::uint32_t reset_code = 0; ///< HTTP/2 error code (RST_STREAM or GOAWAY), 0 when none came
  std::string detail;           ///< in words, for logs only
};

/// Refused streams are sent again on another connection at most this many times per call.
constexpr int max_resends = 3;

/// The call's event sink; see the top of this file for what each callback means and where it runs.
class stream_events {
public:
  virtual ~stream_events() = default;
  virtual bool on_head(stream_head&& head) = 0;
  virtual bool on_data(std::string_view chunk) = 0;
  virtual void on_trailers(header_list&& trailers) = 0;
  virtual void on_end(stream_end&& end) = 0;
};

} // namespace gather
