// One HTTP/2 connection to a downstream origin on one event loop: its socket (plain, or TLS with
// ALPN; h2_link.cpp), its client codec (gather/http2/h2_codec.hpp, the sans-IO nghttp2 session the
// front shares) and the streams of the calls it carries, each call the data of its stream
// (h2_link_session.cpp), and its state and capacity (link_machine.hpp: what
// the pool reads, and what the link's one timer waits for). What a call is, where it goes and how
// it ends is h2_client.hpp's; the link only turns frames into the call's events and tells its
// client when a stream closed, was refused or the connection went. Only the loop's thread touches
// it. Private to app/downstream/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "gather/downstream/pool/link_machine.hpp"
#include "gather/downstream/pool/name_lookups.hpp"
#include "gather/downstream/call/stream_call.hpp"
#include "gather/downstream/call/url_split.hpp"
#include "gather/http2/h2_codec.hpp"

#include "gather/downstream/call/call_deadlines.hpp"
#include "call/inflight_ticket.hpp"
#include "pool/origin_connection.hpp"

namespace gather::downstream_loop {

class h2_client;
class h2_link;

/// A call moves to another link at most this often (a server that allows 0 streams would
/// otherwise make a new connection per move); then it waits where it is.
constexpr int max_moves = 4;

/// One running HTTP/2 call. Its client's running set owns it; while its stream is open the link
/// that carries it holds it too, and the call is its stream's data in the link's codec.
struct h2_call : std::enable_shared_from_this<h2_call> {
  std::uint64_t id = 0;
  stream_request request;
  origin_and_target where;
  std::shared_ptr<stream_events> events;
  inflight_ticket ticket; ///< let go by its end (before on_end), a cancel or the client's end
  call_due due;             ///< its place among its client's deadlines
  h2_link* link = nullptr;  ///< while a stream of a link carries it
  std::int32_t stream_id = 0;
  std::size_t body_sent = 0;
  std::size_t received = 0;    ///< DATA bytes, against max_response_bytes
  std::size_t head_bytes = 0;  ///< header block bytes, against max_response_head_bytes
  int resends = 0;
  int moves = 0;               ///< to another link, for a server that allows fewer streams
  bool got_head = false;
  bool remote_reset = false;   ///< the server sent RST_STREAM
  bool finished = false;
  stream_head head;            ///< being read until got_head
  header_list trailers;
  std::size_t carried_at = 0;  ///< its place in its link's carried list, while it has a stream
};

class h2_link : public std::enable_shared_from_this<h2_link>, private http2::h2_codec_events {
public:
  h2_link(h2_client& owner, asio::io_context& loop, asio::ssl::context& tls, const origin_and_target& where,
          const link_bounds& bounds);
  ~h2_link();
  h2_link(const h2_link&) = delete;
  h2_link& operator=(const h2_link&) = delete;

  /// Connects (a name looked up first), TLS and ALPN for https; calls added meanwhile wait in the
  /// session and leave once the connection is up.
  void open(name_lookups& lookups);
  /// Runs on a connection made elsewhere, whose TLS handshake chose h2 by ALPN (h1_alpn.cpp).
  void adopt(std::unique_ptr<origin_connection> conn);

  /// Can take one more call: connecting or ready, fewer slots counted than the server allows (100
  /// until its SETTINGS say; RFC 9113 recommends no fewer), reset streams not yet freed included.
  bool has_room() const { return machine_.takes_stream(); }
  link_state state() const { return machine_.state(); }
  const link_machine& machine() const { return machine_; }
  /// Takes `call`: its stream opens now (HEADERS and body queued in the session), or once the
  /// server's SETTINGS came (until then nothing but the preface and SETTINGS leaves: a server's
  /// MAX_CONCURRENT_STREAMS is known before a stream is sent). False when the session refused it.
  bool add(const std::shared_ptr<h2_call>& call);
  /// The call leaves the link; a stream still open is reset with CANCEL.
  void release(h2_call& call);
  /// Calls carried now.
  std::size_t load() const { return carried_.size() + waiting_.size(); }
  bool heard_from_server() const { return state() != link_state::connecting; }
  bool closed() const { return state() == link_state::closed; }
  /// Ends the connection: GOAWAY when the session is up, then the socket closes. Calls still on
  /// it end `connection`.
  void shut(std::string why);
  /// No new stream from now on; the link closes once its streams have ended (at once without any).
  void retire(std::string why);
  /// The loop has stopped: the socket closes, nothing is sent, no call is told.
  void close_now() { broken(stream_ending::connection, "the client stopped"); }

  const origin_and_target& where() const { return where_; }

private:
  void connect_to(const tcp::endpoint& endpoint);
  void connected(const error_code& ec);
  void ready(); ///< the transport is up: start reading, send what the session has
  /// The client codec with its first SETTINGS (windows, the header list the answers may have).
  std::unique_ptr<http2::h2_codec> new_codec();
  bool submit(const std::shared_ptr<h2_call>& call);
  /// The call leaves the carried list (its stream closed or given up): the link's hold, returned.
  std::shared_ptr<h2_call> drop(h2_call& call);

  // ---- the codec's events: frames into the calls' events (h2_link_session.cpp) -------------------
  void header(std::int32_t stream, void* data, http2::h2_block, std::string_view name,
              std::string_view value) override;
  void headers_end(std::int32_t stream, void* data, http2::h2_block, bool ends_stream) override;
  void data(std::int32_t stream, void* data, std::string_view bytes) override;
  void reset(std::int32_t stream, void* data, std::uint32_t code) override;
  void stream_closed(std::int32_t stream, void* data, std::uint32_t code) override;
  void request_not_sent(std::int32_t stream, bool refused, const char* why) override;
  long body_bytes(std::int32_t stream, void* data, std::uint8_t* out, std::size_t room,
                  http2::h2_body_end& end) override;
  void frame_received(http2::h2_frame, std::int32_t, bool) override;
  void settings(std::uint32_t max_concurrent_streams) override;
  void goaway(std::int32_t last_stream, std::uint32_t code, std::string_view) override;
  /// The server's first SETTINGS came: the calls waiting for them get their streams, as many as
  /// it allows; the rest go to another link.
  void send_waiting();
  /// Sends what the session has to send; one write at a time. Inside the codec's events (a
  /// read's or a send's) it only notes that a flush is wanted: the codec is not re-entered.
  void flush();
  void read();
  /// The connection is gone: every call on it ends (`how`, or refused for streams the server
  /// never processed), the client forgets the link.
  void broken(stream_ending how, std::string detail);
  /// The link's one timer, at the machine's next check (a held slot's deadline, the idle or the
  /// quiet bound); then what is due is done.
  void rearm();
  void check();
  /// The last slot left (the pool may close the link).
  void maybe_idle();

  template <class F>
  void with_stream(F f) {
    if (conn_->tls_stream)
      f(*conn_->tls_stream);
    else
      f(conn_->socket);
  }

  h2_client& owner_;
  asio::io_context& loop_;
  origin_and_target where_;
  std::unique_ptr<origin_connection> conn_;
  std::unique_ptr<http2::h2_codec> codec_;
  std::vector<std::shared_ptr<h2_call>> carried_; ///< the calls with a stream, in no order
  std::vector<std::shared_ptr<h2_call>> waiting_; ///< taken before the server's SETTINGS came
  std::vector<http2::h2_field> fields_;           ///< a request's head as the codec takes it
  std::string out_;        ///< the bytes being written
  std::vector<char> in_;   ///< the read buffer
  std::uint32_t goaway_code_ = 0;
  link_machine machine_;
  asio::steady_timer timer_;
  std::optional<link_machine::time_point> timer_at_; ///< when the timer is armed for
  /// The transport under the session: until it is up nothing is written.
  enum class transport { opening, up } transport_ = transport::opening;
  /// The write pump: one write at a time, and never inside the codec's own calls.
  struct pump_state {
    bool writing = false;
    bool flush_wanted = false;
  } pump_;
};

} // namespace gather::downstream_loop
