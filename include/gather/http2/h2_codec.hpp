// One HTTP/2 connection's codec over libnghttp2, apart from any socket (sans-IO), for either end:
// bytes in (receive) become events (h2_codec_events), bytes to send are pulled (produce), and what
// to send is submitted (a request, a response, trailers, RST_STREAM, GOAWAY). The framing,
// HPACK, flow control (windows opened again as DATA is read) and RFC 9113's checks are nghttp2's;
// the codec holds nghttp2's callbacks, the first SETTINGS, the header blocks told field by field,
// the body providers and what went wrong, once, for the three users that each wrapped nghttp2
// on their own: the front's server session (app/front/h2_session), the downstream client's links
// (app/downstream/h2/h2_link) and the demo's gRPC book service.
//
// A stream's own data (the caller's call or stream) rides on nghttp2's stream user data, as
// nghttp2's examples/client.c does: given to submit_request (or returned by stream_opened on a
// server) and handed back with every event of the stream, until detach(). No side map.
//
// Not reentrant, as nghttp2 is not: receive() and produce() are never called from inside an event
// (inside() says when one runs); submitting, resetting and detaching are allowed anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct nghttp2_session;

namespace gather::http2 {

enum class h2_role { client, server };

/// A header field to send: names lower case (RFC 9113 8.2.1), pseudo-headers first. Copied by the
/// submit; the bytes need live only during the call.
struct h2_field {
  std::string_view name, value;
};

/// What a header block is on its stream.
enum class h2_block {
  request,  ///< a request's head (a server's stream opened)
  response, ///< the first head of an answer (a client's): final, or informational (1xx)
  later,    ///< any later block: trailers, or the final head after a 1xx
};

/// Frame types (RFC 9113 §6) as events name them.
enum class h2_frame : std::uint8_t {
  data, headers, priority, rst_stream, settings, push_promise, ping, goaway, window_update,
  continuation, other
};

/// How a body's bytes given to nghttp2 end.
enum class h2_body_end {
  more,     ///< more bytes follow
  last,     ///< these are the last: END_STREAM
  trailers, ///< the last bytes; trailers end the stream (submitted with submit_trailers)
};

/// body_bytes: nothing yet; the stream waits until resume().
constexpr long h2_defer = -1;

/// What ended the connection from the codec's side, once.
enum class h2_failure {
  none,
  bad_preface,   ///< a server read no client preface: not HTTP/2
  protocol,      ///< the peer broke RFC 9113 (a malformed frame, a bad header block, ...): GOAWAY
  flood,         ///< the peer did not read what it asked for (SETTINGS, PING ACKs): GOAWAY
  continuations, ///< a header block in more CONTINUATION frames than allowed: GOAWAY
  internal,      ///< the library failed (memory, a callback)
};

struct h2_failure_info {
  h2_failure kind = h2_failure::none;
  std::uint32_t code = 0; ///< the RFC 9113 error code of the GOAWAY sent for it
  std::string text;       ///< nghttp2's words for it, for a log line or a call's end
};

/// The first SETTINGS sent, and nghttp2's own bounds.
struct h2_settings {
  std::uint32_t max_concurrent_streams = 0; ///< streams the peer may open; 0: not announced
  std::uint32_t initial_window_bytes = 0;   ///< each stream's receive window; 0: RFC's 65535
  std::uint32_t max_header_list_bytes = 0;  ///< announced; 0: not announced
  std::int32_t connection_window_bytes = 0; ///< the connection's receive window; 0: RFC's 65535
  bool no_rfc7540_priorities = false;       ///< RFC 9218 §2.1 (the priority tree unused)
  bool forget_closed_streams = false;       ///< no priority tree: closed streams freed at once
  std::size_t max_continuations = 0;        ///< CONTINUATION frames per block; 0: nghttp2's 8
  std::uint64_t max_resets_per_second = 0;  ///< the library's RST_STREAM bound; 0: nghttp2's
};

/// What the codec tells its user. Every call happens inside receive() or produce(); `data` is the
/// stream's data (nullptr when it has none, or after detach()).
class h2_codec_events {
public:
  virtual ~h2_codec_events() = default;

  // ---- a stream ----------------------------------------------------------------------------------
  /// A server's stream opened by the peer's request; the result becomes the stream's data.
  virtual void* stream_opened(std::int32_t /*stream*/) { return nullptr; }
  /// A header block begins (after stream_opened for a request).
  virtual void headers_begin(std::int32_t /*stream*/, void* /*data*/, h2_block) {}
  /// One field of a header block; pseudo-headers keep their ':'.
  virtual void header(std::int32_t /*stream*/, void* /*data*/, h2_block, std::string_view /*name*/,
                      std::string_view /*value*/) {}
  /// The block is complete; `ends_stream`: the peer's side of the stream ends with it.
  virtual void headers_end(std::int32_t /*stream*/, void* /*data*/, h2_block, bool /*ends_stream*/) {}
  /// Body bytes as they are read (nothing is kept: the windows open again as they are told).
  virtual void data(std::int32_t /*stream*/, void* /*data*/, std::string_view /*bytes*/) {}
  /// DATA with END_STREAM: the peer's side ended after a body.
  virtual void data_end(std::int32_t /*stream*/, void* /*data*/) {}
  /// The peer reset an open stream (stream_closed follows).
  virtual void reset(std::int32_t /*stream*/, void* /*data*/, std::uint32_t /*code*/) {}
  /// The stream is closed: both sides ended (code 0), or a reset by either side, or the stream was
  /// above a GOAWAY's last stream id (REFUSED_STREAM). Its data is the caller's to free now.
  virtual void stream_closed(std::int32_t /*stream*/, void* /*data*/, std::uint32_t /*code*/) {}
  /// A client's request never left: `refused` when no stream may start any more (a GOAWAY came, the
  /// session is closing), the server saw nothing; `data` is nullptr (the stream never opened).
  virtual void request_not_sent(std::int32_t /*stream*/, bool /*refused*/, const char* /*why*/) {}
  /// Copies up to `room` bytes of a body submitted with has_body into `out`; returns the count,
  /// or h2_defer.
  virtual long body_bytes(std::int32_t /*stream*/, void* /*data*/, std::uint8_t* /*out*/, std::size_t /*room*/,
                          h2_body_end& end) {
    end = h2_body_end::last;
    return 0;
  }

  // ---- the connection ----------------------------------------------------------------------------
  /// Every frame read, before the events it makes (a peer's liveness, its control frames counted).
  virtual void frame_received(h2_frame, std::int32_t /*stream*/, bool /*ack*/) {}
  /// The peer's SETTINGS (not an ACK): its MAX_CONCURRENT_STREAMS as now in force.
  virtual void settings(std::uint32_t /*max_concurrent_streams*/) {}
  /// The peer goes away: streams above `last_stream` are closed (REFUSED_STREAM) right after.
  virtual void goaway(std::int32_t /*last_stream*/, std::uint32_t /*code*/, std::string_view /*debug*/) {}
};

class h2_codec {
public:
  h2_codec(h2_role role, const h2_settings& settings, h2_codec_events& events);
  ~h2_codec();
  h2_codec(const h2_codec&) = delete;
  h2_codec& operator=(const h2_codec&) = delete;

  /// Feeds bytes read from the peer. False: a fatal error (failure() says which); a GOAWAY is
  /// queued when one can be made, and nothing more is read.
  bool receive(const std::uint8_t* data, std::size_t size);
  /// Appends bytes to send to `out`, up to about `max`. False: a fatal error.
  bool produce(std::string& out, std::size_t max);

  /// Client: a request's stream with `data` as its data (HEADERS, then the body read with
  /// body_bytes when `has_body`). The stream id, or negative when no stream may start.
  std::int32_t submit_request(const h2_field* fields, std::size_t count, bool has_body, void* data);
  /// Server: an answer's head; its body read with body_bytes when `has_body`.
  bool submit_response(std::int32_t stream, const h2_field* fields, std::size_t count, bool has_body);
  /// Trailers ending the stream (inside body_bytes after h2_body_end::trailers, or after a body).
  bool submit_trailers(std::int32_t stream, const h2_field* fields, std::size_t count);
  template <class Fields>
  std::int32_t submit_request(const Fields& f, bool has_body, void* data) {
    return submit_request(f.data(), f.size(), has_body, data);
  }
  template <class Fields>
  bool submit_response(std::int32_t stream, const Fields& f, bool has_body) {
    return submit_response(stream, f.data(), f.size(), has_body);
  }
  template <class Fields>
  bool submit_trailers(std::int32_t stream, const Fields& f) {
    return submit_trailers(stream, f.data(), f.size());
  }
  /// A body that was deferred (h2_defer) has bytes now.
  void resume(std::int32_t stream);
  /// RST_STREAM with an RFC 9113 error code (h2_codes.hpp).
  void reset(std::int32_t stream, std::uint32_t code);
  /// Graceful: GOAWAY with the last stream the peer opened that was taken (a server's), no new
  /// streams; those begun finish.
  void goaway(std::uint32_t code);
  /// GOAWAY with `code` and nothing more read once it is written: the connection ends.
  void terminate(std::uint32_t code);

  /// The stream's data from now on (nullptr: none); for a stream not open yet, its request's.
  void attach(std::int32_t stream, void* data);
  void detach(std::int32_t stream) { attach(stream, nullptr); }
  void* data_of(std::int32_t stream) const;
  /// The stream is open in the session: its HEADERS left (or came) and it is not closed.
  bool has_stream(std::int32_t stream) const;

  /// The peer's MAX_CONCURRENT_STREAMS (until its SETTINGS come: 100, the fewest RFC 9113 5.1.2
  /// recommends, as nghttp2 assumes).
  std::uint32_t peer_max_concurrent_streams() const;
  bool wants_read() const;
  bool wants_write() const;
  /// False once nothing more will be read nor written: the connection can close.
  bool alive() const { return wants_read() || wants_write(); }
  /// Inside receive() or produce(): neither may be called now.
  bool inside() const { return inside_ > 0; }
  const h2_failure_info& failure() const { return failure_; }

private:
  friend struct h2_codec_callbacks;
  void fail(h2_failure kind, std::uint32_t code, std::string text);

  nghttp2_session* session_ = nullptr;
  h2_codec_events& events_;
  h2_failure_info failure_;
  int inside_ = 0;
  std::uint32_t own_goaway_code_ = 0; ///< the error code of a GOAWAY the user asked for
  /// The header block being read: its stream and data, fetched once per block.
  std::int32_t block_stream_ = 0;
  void* block_data_ = nullptr;
  h2_block block_kind_ = h2_block::request;
};

} // namespace gather::http2
