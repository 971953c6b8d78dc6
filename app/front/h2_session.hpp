// One HTTP/2 server session, apart from any socket: bytes in (receive), bytes out (produce), and
// what happened on the streams told to an `h2_events`. The framing, HPACK, flow control and the
// RFC 9113 checks are the shared codec's (gather/http2/h2_codec.hpp, over libnghttp2), as the
// downstream client's are; this adds Gather's bounds for clients (docs/security.md):
// resets and control frames per second (token buckets), CONTINUATION frames per HEADERS, the
// decoded header list size. A client over a bound gets GOAWAY (ENHANCE_YOUR_CALM) and `abuse()`
// says which bound it crossed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/http2/h2_codec.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/h2_codes.hpp"

namespace gather {


/// What the session tells its connection. Every call happens inside receive() or produce(). A
/// stream's record (what stream_opened returned) rides on the codec's stream data and comes back
/// with each later event of the stream: no lookup by id.
class h2_events {
public:
  virtual ~h2_events() = default;
  /// A request's HEADERS began on a new stream; the result is the stream's record.
  virtual void* stream_opened(std::int32_t stream) = 0;
  /// One request header; pseudo-headers keep their ':'. Fields past max_header_list_bytes are
  /// not passed on: `header_list_too_large` is called once instead.
  virtual void header(std::int32_t stream, void* record, std::string_view name, std::string_view value) = 0;
  virtual void header_list_too_large(std::int32_t stream, void* record) = 0;
  /// The request's head is complete; `ends_stream`: no body follows.
  virtual void head_done(std::int32_t stream, void* record, bool ends_stream) = 0;
  virtual void body(std::int32_t stream, void* record, std::string_view bytes) = 0;
  /// The client's side of the stream ended (END_STREAM after a body or trailers).
  virtual void body_done(std::int32_t stream, void* record) = 0;
  /// The stream is closed (answered, or reset by either side: `error_code` non-zero); its record
  /// is never handed back again.
  virtual void stream_closed(std::int32_t stream, void* record, std::uint32_t error_code) = 0;
  /// Copies up to `room` bytes of the stream's answer body into `out`. Returns the bytes copied,
  /// and sets `last` when the body ends with them; -1: nothing yet (the stream waits, resume()).
  virtual long answer_bytes(std::int32_t stream, void* record, std::uint8_t* out, std::size_t room, bool& last) = 0;
};

/// A token bucket: `burst` tokens at first and at most, `rate` more each second.
class token_bucket {
public:
  using clock = std::chrono::steady_clock;
  token_bucket(double rate, double burst) : rate_(rate), burst_(burst), tokens_(burst) {}
  /// Takes one token; false when there is none.
  bool take(clock::time_point now);

private:
  double rate_, burst_, tokens_;
  clock::time_point last_{};
};

class h2_session final : private http2::h2_codec_events {
public:
  h2_session(const http2_limits& limits, h2_events& events);
  ~h2_session();
  h2_session(const h2_session&) = delete;
  h2_session& operator=(const h2_session&) = delete;

  /// Feeds bytes read from the client. False: the connection must end (after sending what
  /// produce() still gives, a GOAWAY when one could be made).
  bool receive(const std::uint8_t* data, std::size_t size);
  /// Appends bytes to send to `out`, up to about `max`. False: a fatal error.
  bool produce(std::string& out, std::size_t max);

  /// Submits an answer's head; the body is read with h2_events::answer_bytes when `has_body`.
  void respond(std::int32_t stream, const std::vector<std::pair<std::string, std::string>>& headers,
               bool has_body);
  /// The answer of a stream that waited (answer_bytes returned -1) has bytes now.
  void resume(std::int32_t stream);
  /// Ends one stream (RST_STREAM) with an RFC 9113 error code.
  void reset(std::int32_t stream, std::uint32_t error_code);
  /// Graceful shutdown: GOAWAY with the last stream taken; those streams finish, no new ones.
  void shut_down();
  /// Ends the connection for `why`: GOAWAY with ENHANCE_YOUR_CALM (or PROTOCOL_ERROR), no more
  /// frames are read.
  void refuse(h2_abuse why);

  /// False once nothing more will be read nor written: the connection can close.
  bool alive() const { return codec_.alive(); }
  bool wants_write() const { return codec_.wants_write(); }
  h2_abuse abuse() const { return abuse_; }

private:
  // ---- the codec's events, under Gather's bounds -------------------------------------------------
  void* stream_opened(std::int32_t stream) override;
  void headers_begin(std::int32_t stream, void*, http2::h2_block kind) override;
  void header(std::int32_t stream, void* record, http2::h2_block kind, std::string_view name,
              std::string_view value) override;
  void headers_end(std::int32_t stream, void* record, http2::h2_block kind, bool ends_stream) override;
  void data(std::int32_t stream, void* record, std::string_view bytes) override;
  void data_end(std::int32_t stream, void* record) override;
  void stream_closed(std::int32_t stream, void* record, std::uint32_t code) override;
  long body_bytes(std::int32_t stream, void* record, std::uint8_t* out, std::size_t room,
                  http2::h2_body_end& end) override;
  void frame_received(http2::h2_frame type, std::int32_t stream, bool ack) override;
  /// The client's GOAWAY: its streams open so far are served; any it opens later is refused.
  void goaway(std::int32_t last_stream, std::uint32_t code, std::string_view debug) override;

  h2_events& events_;
  const http2_limits limits_;
  token_bucket resets_;
  token_bucket control_;
  std::size_t header_bytes_ = 0; ///< of the header list being decoded
  bool header_list_refused_ = false;
  bool client_left_ = false; ///< the client sent GOAWAY
  h2_abuse abuse_ = h2_abuse::none;
  std::vector<http2::h2_field> fields_; ///< an answer's head as the codec takes it (reused)
  http2::h2_codec codec_;               ///< last: built once the bounds above are
};

} // namespace gather
