#include "h2_session.hpp"

#include <algorithm>
#include <stdexcept>

#include <nghttp2/nghttp2.h>

namespace gather {

namespace {

/// RFC 7541 4.1: a header field's size in a header list is name + value + 32.
constexpr std::size_t field_overhead = 32;

/// nghttp2's own reset limit stays as a backstop behind Gather's, which fires first and names the
/// cause: twice the configured rate.
constexpr std::uint64_t library_reset_factor = 2;

} // namespace

bool token_bucket::take(clock::time_point now) {
  if (last_ != clock::time_point{}) {
    const std::chrono::duration<double> passed = now - last_;
    tokens_ = std::min(burst_, tokens_ + passed.count() * rate_);
  }
  last_ = now;
  if (tokens_ < 1.0)
    return false;
  tokens_ -= 1.0;
  return true;
}

/// nghttp2's C callbacks, each forwarding to the session (user_data).
struct h2_callbacks {
  static h2_session& self(void* user_data) { return *static_cast<h2_session*>(user_data); }
  static bool is_request(const nghttp2_frame* frame) {
    return frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST;
  }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto& s = self(user_data);
    s.header_bytes_ = 0;
    s.header_list_refused_ = false;
    if (is_request(frame) && s.abuse_ == h2_abuse::none)
      s.events_.stream_opened(frame->hd.stream_id);
    return 0;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                    std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                    std::uint8_t, void* user_data) {
    auto& s = self(user_data);
    if (!is_request(frame) || s.abuse_ != h2_abuse::none || s.header_list_refused_)
      return 0; // trailers are read and dropped (their size is bounded by the same checks)
    s.header_bytes_ += name_size + value_size + field_overhead;
    if (s.header_bytes_ > s.limits_.max_header_list_bytes) {
      s.header_list_refused_ = true;
      s.events_.header_list_too_large(frame->hd.stream_id);
      return 0;
    }
    s.events_.header(frame->hd.stream_id,
                     {reinterpret_cast<const char*>(name), name_size},
                     {reinterpret_cast<const char*>(value), value_size});
    return 0;
  }

  static int frame_received(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    auto& s = self(user_data);
    if (s.abuse_ != h2_abuse::none)
      return 0;
    const auto now = token_bucket::clock::now();
    const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        if (is_request(frame))
          s.events_.head_done(frame->hd.stream_id, ends);
        else if (ends)
          s.events_.body_done(frame->hd.stream_id); // trailers end the request
        break;
      case NGHTTP2_DATA:
        if (ends)
          s.events_.body_done(frame->hd.stream_id);
        break;
      case NGHTTP2_RST_STREAM:
        if (!s.resets_.take(now))
          s.refuse(h2_abuse::rapid_reset);
        break;
      case NGHTTP2_PING:
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !s.control_.take(now))
          s.refuse(h2_abuse::control_flood);
        break;
      case NGHTTP2_PRIORITY:
        if (!s.control_.take(now))
          s.refuse(h2_abuse::control_flood);
        break;
      default:
        break;
    }
    return 0;
  }

  static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                        std::size_t size, void* user_data) {
    auto& s = self(user_data);
    if (s.abuse_ == h2_abuse::none)
      s.events_.body(stream, {reinterpret_cast<const char*>(data), size});
    return 0;
  }

  static int stream_closed(nghttp2_session*, std::int32_t stream, std::uint32_t error_code,
                           void* user_data) {
    self(user_data).events_.stream_closed(stream, error_code);
    return 0;
  }

  static ssize_t read_answer(nghttp2_session*, std::int32_t stream, std::uint8_t* out,
                             std::size_t room, std::uint32_t* flags, nghttp2_data_source*,
                             void* user_data) {
    bool last = false;
    const long n = self(user_data).events_.answer_bytes(stream, out, room, last);
    if (n < 0)
      return NGHTTP2_ERR_DEFERRED;
    if (last)
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    return n;
  }
};

h2_session::h2_session(const http2_limits& limits, h2_events& events)
  : events_(events),
    limits_(limits),
    resets_(static_cast<double>(limits.max_resets_per_second),
            static_cast<double>(limits.max_resets_per_second)),
    control_(static_cast<double>(limits.max_control_frames_per_second),
             static_cast<double>(limits.max_control_frames_per_second)) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_option* options = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0 || nghttp2_option_new(&options) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    throw std::bad_alloc();
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, h2_callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, h2_callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, h2_callbacks::frame_received);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, h2_callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, h2_callbacks::stream_closed);
  nghttp2_option_set_max_continuations(options, limits.max_continuation_frames);
  const auto resets = static_cast<std::uint64_t>(limits.max_resets_per_second) * library_reset_factor;
  nghttp2_option_set_stream_reset_rate_limit(options, resets, resets);
  nghttp2_option_set_no_closed_streams(options, 1); // no priority tree: closed streams are freed
  const int made = nghttp2_session_server_new2(&session_, callbacks, this, options);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_option_del(options);
  if (made != 0)
    throw std::bad_alloc();
  const nghttp2_settings_entry settings[] = {
    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, static_cast<std::uint32_t>(limits.max_concurrent_streams)},
    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(limits.initial_window_bytes)},
    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits.max_header_list_bytes)},
    {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
}

h2_session::~h2_session() {
  nghttp2_session_del(session_);
}

bool h2_session::receive(const std::uint8_t* data, std::size_t size) {
  if (abuse_ != h2_abuse::none)
    return false;
  const auto used = nghttp2_session_mem_recv(session_, data, size);
  if (used < 0) {
    if (abuse_ == h2_abuse::none)
      abuse_ = used == NGHTTP2_ERR_FLOODED              ? h2_abuse::ack_flood
               : used == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ? h2_abuse::continuation_flood
                                                            : h2_abuse::protocol_error;
    // A fatal error leaves the session able to say GOAWAY: the client learns why.
    nghttp2_session_terminate_session(session_, abuse_ == h2_abuse::protocol_error
                                                  ? NGHTTP2_PROTOCOL_ERROR
                                                  : NGHTTP2_ENHANCE_YOUR_CALM);
    return false;
  }
  return abuse_ == h2_abuse::none;
}

bool h2_session::produce(std::string& out, std::size_t max) {
  while (out.size() < max) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session_, &data);
    if (n < 0)
      return false;
    if (n == 0)
      break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  return true;
}

void h2_session::respond(std::int32_t stream,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         bool has_body) {
  std::vector<nghttp2_nv> fields;
  fields.reserve(headers.size());
  for (const auto& [name, value] : headers)
    fields.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())),
                      name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  nghttp2_data_provider body{};
  body.read_callback = h2_callbacks::read_answer;
  nghttp2_submit_response(session_, stream, fields.data(), fields.size(), has_body ? &body : nullptr);
}

void h2_session::resume(std::int32_t stream) {
  nghttp2_session_resume_data(session_, stream);
}

void h2_session::reset(std::int32_t stream, std::uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, error_code);
}

void h2_session::shut_down() {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
}

void h2_session::refuse(h2_abuse why) {
  if (abuse_ != h2_abuse::none)
    return;
  abuse_ = why;
  nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

bool h2_session::alive() const {
  return nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_);
}

bool h2_session::wants_write() const {
  return nghttp2_session_want_write(session_) != 0;
}

} // namespace gather
