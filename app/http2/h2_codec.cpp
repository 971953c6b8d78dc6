// The sans-IO HTTP/2 codec (h2_codec.hpp): nghttp2's callbacks turned into h2_codec_events, the
// fields to send turned into nghttp2's, and what went wrong kept once.
#include "gather/http2/h2_codec.hpp"

#include <array>
#include <iterator>
#include <new>
#include <vector>

#include <nghttp2/nghttp2.h>

namespace gather::http2 {

namespace {

h2_frame frame_of(std::uint8_t type) {
  return type <= NGHTTP2_CONTINUATION ? static_cast<h2_frame>(type) : h2_frame::other;
}

h2_block block_of(const nghttp2_frame* frame) {
  switch (frame->headers.cat) {
    case NGHTTP2_HCAT_REQUEST: return h2_block::request;
    case NGHTTP2_HCAT_RESPONSE:
    case NGHTTP2_HCAT_PUSH_RESPONSE: return h2_block::response;
    default: return h2_block::later;
  }
}

std::string_view text(const std::uint8_t* p, std::size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

std::uint8_t* bytes(std::string_view s) {
  return reinterpret_cast<std::uint8_t*>(const_cast<char*>(s.data()));
}

/// The fields as nghttp2 takes them (it copies them): on the stack for the usual few.
class nv_list {
public:
  nv_list(const h2_field* fields, std::size_t count) : count_(count) {
    nghttp2_nv* to = local_.data();
    if (count > local_.size()) {
      heap_.resize(count);
      to = heap_.data();
    }
    for (std::size_t i = 0; i < count; ++i)
      to[i] = {bytes(fields[i].name), bytes(fields[i].value), fields[i].name.size(), fields[i].value.size(),
               NGHTTP2_NV_FLAG_NONE};
    data_ = to;
  }
  const nghttp2_nv* data() const { return data_; }
  std::size_t size() const { return count_; }

private:
  std::array<nghttp2_nv, 24> local_;
  std::vector<nghttp2_nv> heap_;
  const nghttp2_nv* data_ = nullptr;
  std::size_t count_;
};

/// The stream is open (or half closed) in the session: neither closed nor idle.
bool is_open(nghttp2_session* session, std::int32_t stream) {
  auto* s = nghttp2_session_find_stream(session, stream);
  if (s == nullptr || stream == 0)
    return false;
  const auto state = nghttp2_stream_get_state(s);
  return state != NGHTTP2_STREAM_STATE_CLOSED && state != NGHTTP2_STREAM_STATE_IDLE;
}

static_assert(static_cast<int>(h2_frame::continuation) == NGHTTP2_CONTINUATION);
static_assert(static_cast<int>(h2_frame::goaway) == NGHTTP2_GOAWAY);

} // namespace

/// nghttp2's C callbacks, each forwarding to the codec (user_data) and its events.
struct h2_codec_callbacks {
  static h2_codec& self(void* user_data) { return *static_cast<h2_codec*>(user_data); }
  static void* data_of(nghttp2_session* session, std::int32_t stream) {
    return nghttp2_session_get_stream_user_data(session, stream);
  }

  static int begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto& c = self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS)
      return 0;
    const auto stream = frame->hd.stream_id;
    c.block_stream_ = stream;
    c.block_kind_ = block_of(frame);
    if (c.block_kind_ == h2_block::request) {
      c.block_data_ = c.events_.stream_opened(stream);
      if (c.block_data_)
        nghttp2_session_set_stream_user_data(session, stream, c.block_data_);
    } else {
      c.block_data_ = data_of(session, stream);
    }
    c.events_.headers_begin(stream, c.block_data_, c.block_kind_);
    return 0;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t name_size,
                    const std::uint8_t* value, std::size_t value_size, std::uint8_t, void* user_data) {
    auto& c = self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != c.block_stream_)
      return 0; // (PUSH_PROMISE: a client refuses push in its SETTINGS)
    c.events_.header(c.block_stream_, c.block_data_, c.block_kind_, text(name, name_size), text(value, value_size));
    return 0;
  }

  static int frame_received(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto& c = self(user_data);
    const auto stream = frame->hd.stream_id;
    const bool ack = (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0;
    c.events_.frame_received(frame_of(frame->hd.type), stream, ack);
    const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS: {
        const bool same = stream == c.block_stream_;
        void* data = same ? c.block_data_ : data_of(session, stream);
        const h2_block kind = same ? c.block_kind_ : block_of(frame);
        c.block_stream_ = 0;
        c.block_data_ = nullptr;
        c.events_.headers_end(stream, data, kind, ends);
        break;
      }
      case NGHTTP2_DATA:
        if (ends)
          c.events_.data_end(stream, data_of(session, stream));
        break;
      case NGHTTP2_RST_STREAM: // (one for a stream already closed is nothing to its user)
        if (is_open(session, stream))
          c.events_.reset(stream, data_of(session, stream), frame->rst_stream.error_code);
        break;
      case NGHTTP2_SETTINGS:
        if (!ack)
          c.events_.settings(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
        break;
      case NGHTTP2_GOAWAY:
        c.events_.goaway(frame->goaway.last_stream_id, frame->goaway.error_code,
                         text(frame->goaway.opaque_data, frame->goaway.opaque_data_len));
        break;
      default:
        break;
    }
    return 0;
  }

  static int data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                        std::size_t size, void* user_data) {
    self(user_data).events_.data(stream, data_of(session, stream), text(data, size));
    return 0;
  }

  static int stream_closed(nghttp2_session* session, std::int32_t stream, std::uint32_t code, void* user_data) {
    auto& c = self(user_data);
    if (c.block_stream_ == stream) { // closed inside its own header block (a reset)
      c.block_stream_ = 0;
      c.block_data_ = nullptr;
    }
    c.events_.stream_closed(stream, data_of(session, stream), code);
    return 0;
  }

  static int not_sent(nghttp2_session*, const nghttp2_frame* frame, int error, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
      return 0;
    const bool refused = error == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED || error == NGHTTP2_ERR_STREAM_CLOSING;
    self(user_data).events_.request_not_sent(frame->hd.stream_id, refused, nghttp2_strerror(error));
    return 0;
  }

  static int frame_sent(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto& c = self(user_data);
    // A GOAWAY with an error that the user did not ask for is nghttp2's answer to a peer that broke
    // the protocol; its debug data says how ("DATA: stream_id == 0").
    if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR &&
        frame->goaway.error_code != c.own_goaway_code_)
      c.fail(h2_failure::protocol, frame->goaway.error_code,
             frame->goaway.opaque_data_len == 0
               ? std::string{nghttp2_http2_strerror(frame->goaway.error_code)}
               : std::string(text(frame->goaway.opaque_data, frame->goaway.opaque_data_len)));
    return 0;
  }

  static ssize_t read_body(nghttp2_session* session, std::int32_t stream, std::uint8_t* out, std::size_t room,
                           std::uint32_t* flags, nghttp2_data_source*, void* user_data) {
    auto end = h2_body_end::more;
    const long n = self(user_data).events_.body_bytes(stream, data_of(session, stream), out, room, end);
    if (n < 0)
      return NGHTTP2_ERR_DEFERRED;
    if (end != h2_body_end::more)
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (end == h2_body_end::trailers)
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return n;
  }
};

h2_codec::h2_codec(h2_role role, const h2_settings& settings, h2_codec_events& events) : events_(events) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_option* options = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0 || nghttp2_option_new(&options) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    throw std::bad_alloc();
  }
  using cb = h2_codec_callbacks;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, cb::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, cb::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, cb::frame_received);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, cb::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, cb::stream_closed);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, cb::not_sent);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, cb::frame_sent);
  if (settings.max_continuations > 0)
    nghttp2_option_set_max_continuations(options, settings.max_continuations);
  if (settings.max_resets_per_second > 0)
    nghttp2_option_set_stream_reset_rate_limit(options, settings.max_resets_per_second,
                                               settings.max_resets_per_second);
  if (settings.forget_closed_streams)
    nghttp2_option_set_no_closed_streams(options, 1);
  const int made = role == h2_role::server ? nghttp2_session_server_new2(&session_, callbacks, this, options)
                                           : nghttp2_session_client_new2(&session_, callbacks, this, options);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_option_del(options);
  if (made != 0)
    throw std::bad_alloc();
  std::array<nghttp2_settings_entry, 5> entries{};
  std::size_t n = 0;
  if (role == h2_role::client)
    entries[n++] = {NGHTTP2_SETTINGS_ENABLE_PUSH, 0};
  if (settings.max_concurrent_streams > 0)
    entries[n++] = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams};
  if (settings.initial_window_bytes > 0)
    entries[n++] = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initial_window_bytes};
  if (settings.max_header_list_bytes > 0)
    entries[n++] = {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_list_bytes};
  if (settings.no_rfc7540_priorities)
    entries[n++] = {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries.data(), n);
  if (settings.connection_window_bytes > 0)
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, settings.connection_window_bytes);
}

h2_codec::~h2_codec() {
  nghttp2_session_del(session_);
}

void h2_codec::fail(h2_failure kind, std::uint32_t code, std::string text) {
  if (failure_.kind == h2_failure::none)
    failure_ = {kind, code, std::move(text)};
}

bool h2_codec::receive(const std::uint8_t* data, std::size_t size) {
  if (failure_.kind != h2_failure::none && failure_.kind != h2_failure::protocol)
    return false; // a fatal error before: nothing more is read
  ++inside_;
  const auto used = nghttp2_session_mem_recv(session_, data, size);
  --inside_;
  if (used >= 0)
    return true;
  const auto n = static_cast<int>(used);
  const auto kind = n == NGHTTP2_ERR_BAD_CLIENT_MAGIC       ? h2_failure::bad_preface
                    : n == NGHTTP2_ERR_FLOODED               ? h2_failure::flood
                    : n == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ? h2_failure::continuations
                    : n == NGHTTP2_ERR_CALLBACK_FAILURE || n == NGHTTP2_ERR_NOMEM ? h2_failure::internal
                                                                                   : h2_failure::protocol;
  const std::uint32_t code = kind == h2_failure::flood || kind == h2_failure::continuations
                               ? NGHTTP2_ENHANCE_YOUR_CALM
                               : kind == h2_failure::internal ? NGHTTP2_INTERNAL_ERROR : NGHTTP2_PROTOCOL_ERROR;
  failure_ = {kind, code, nghttp2_strerror(n)}; // a fatal error says more than a GOAWAY before it
  // A fatal error leaves the session able to say GOAWAY: the peer learns why.
  terminate(code);
  return false;
}

bool h2_codec::produce(std::string& out, std::size_t max) {
  ++inside_;
  bool ok = true;
  while (out.size() < max) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      fail(h2_failure::internal, NGHTTP2_INTERNAL_ERROR, nghttp2_strerror(static_cast<int>(n)));
      ok = false;
      break;
    }
    if (n == 0)
      break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  --inside_;
  return ok;
}

std::int32_t h2_codec::submit_request(const h2_field* fields, std::size_t count, bool has_body, void* data) {
  const nv_list nv(fields, count);
  nghttp2_data_provider body{};
  body.read_callback = h2_codec_callbacks::read_body;
  return nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), has_body ? &body : nullptr, data);
}

bool h2_codec::submit_response(std::int32_t stream, const h2_field* fields, std::size_t count, bool has_body) {
  const nv_list nv(fields, count);
  nghttp2_data_provider body{};
  body.read_callback = h2_codec_callbacks::read_body;
  return nghttp2_submit_response(session_, stream, nv.data(), nv.size(), has_body ? &body : nullptr) == 0;
}

bool h2_codec::submit_trailers(std::int32_t stream, const h2_field* fields, std::size_t count) {
  const nv_list nv(fields, count);
  return nghttp2_submit_trailer(session_, stream, nv.data(), nv.size()) == 0;
}

void h2_codec::resume(std::int32_t stream) {
  nghttp2_session_resume_data(session_, stream);
}

void h2_codec::reset(std::int32_t stream, std::uint32_t code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, code);
}

void h2_codec::goaway(std::uint32_t code) {
  own_goaway_code_ = code;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_), code,
                        nullptr, 0);
}

void h2_codec::terminate(std::uint32_t code) {
  own_goaway_code_ = code;
  nghttp2_session_terminate_session(session_, code);
}

void h2_codec::attach(std::int32_t stream, void* data) {
  if (stream == block_stream_)
    block_data_ = data;
  nghttp2_session_set_stream_user_data(session_, stream, data);
}

void* h2_codec::data_of(std::int32_t stream) const {
  return nghttp2_session_get_stream_user_data(session_, stream);
}

bool h2_codec::has_stream(std::int32_t stream) const {
  return is_open(session_, stream);
}

std::uint32_t h2_codec::peer_max_concurrent_streams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

bool h2_codec::wants_read() const {
  return nghttp2_session_want_read(session_) != 0;
}

bool h2_codec::wants_write() const {
  return nghttp2_session_want_write(session_) != 0;
}

} // namespace gather::http2
