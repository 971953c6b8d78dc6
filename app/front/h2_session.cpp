#include "h2_session.hpp"

#include <algorithm>

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

// ---- the codec's events -------------------------------------------------------------------------

void* h2_session::stream_opened(std::int32_t stream) {
  if (abuse_ != h2_abuse::none)
    return nullptr;
  if (client_left_) {
    // A stream the client opens after its own GOAWAY is refused, whatever else is queued: nghttp2
    // itself drops it only once nothing is left to send, which would make serving it depend on
    // how the client's bytes were cut into reads (found by fuzz/fuzz_h2.cpp).
    codec_.reset(stream, h2_code::refused_stream);
    return nullptr;
  }
  return events_.stream_opened(stream);
}

void h2_session::headers_begin(std::int32_t, void*, http2::h2_block) {
  header_bytes_ = 0;
  header_list_refused_ = false;
}

void h2_session::header(std::int32_t stream, void* record, http2::h2_block kind, std::string_view name,
                        std::string_view value) {
  if (!record || kind != http2::h2_block::request || abuse_ != h2_abuse::none || header_list_refused_)
    return; // trailers are read and dropped (their size is bounded by the same checks)
  header_bytes_ += name.size() + value.size() + field_overhead;
  if (header_bytes_ > limits_.max_header_list_bytes) {
    header_list_refused_ = true;
    events_.header_list_too_large(stream, record);
    return;
  }
  events_.header(stream, record, name, value);
}

void h2_session::headers_end(std::int32_t stream, void* record, http2::h2_block kind, bool ends_stream) {
  if (!record || abuse_ != h2_abuse::none)
    return;
  if (kind == http2::h2_block::request)
    events_.head_done(stream, record, ends_stream);
  else if (ends_stream)
    events_.body_done(stream, record); // trailers end the request
}

void h2_session::data(std::int32_t stream, void* record, std::string_view bytes) {
  if (record && abuse_ == h2_abuse::none)
    events_.body(stream, record, bytes);
}

void h2_session::data_end(std::int32_t stream, void* record) {
  if (record && abuse_ == h2_abuse::none)
    events_.body_done(stream, record);
}

void h2_session::stream_closed(std::int32_t stream, void* record, std::uint32_t code) {
  events_.stream_closed(stream, record, code);
}

long h2_session::body_bytes(std::int32_t stream, void* record, std::uint8_t* out, std::size_t room,
                            http2::h2_body_end& end) {
  bool last = false;
  const long n = events_.answer_bytes(stream, record, out, room, last);
  if (n < 0)
    return http2::h2_defer;
  end = last ? http2::h2_body_end::last : http2::h2_body_end::more;
  return n;
}

void h2_session::goaway(std::int32_t, std::uint32_t, std::string_view) {
  client_left_ = true;
}

void h2_session::frame_received(http2::h2_frame type, std::int32_t, bool ack) {
  if (abuse_ != h2_abuse::none)
    return;
  const auto now = token_bucket::clock::now();
  switch (type) {
    case http2::h2_frame::rst_stream:
      if (!resets_.take(now))
        refuse(h2_abuse::rapid_reset);
      break;
    case http2::h2_frame::ping:
    case http2::h2_frame::settings:
      if (!ack && !control_.take(now))
        refuse(h2_abuse::control_flood);
      break;
    case http2::h2_frame::priority:
      if (!control_.take(now))
        refuse(h2_abuse::control_flood);
      break;
    default:
      break;
  }
}

// ---- the session ---------------------------------------------------------------------------------

namespace {

http2::h2_settings settings_of(const http2_limits& limits) {
  http2::h2_settings s;
  s.max_concurrent_streams = static_cast<std::uint32_t>(limits.max_concurrent_streams);
  s.initial_window_bytes = static_cast<std::uint32_t>(limits.initial_window_bytes);
  s.max_header_list_bytes = static_cast<std::uint32_t>(limits.max_header_list_bytes);
  s.no_rfc7540_priorities = true;
  s.forget_closed_streams = true; // no priority tree: closed streams are freed
  s.max_continuations = limits.max_continuation_frames;
  s.max_resets_per_second = static_cast<std::uint64_t>(limits.max_resets_per_second) * library_reset_factor;
  return s;
}

} // namespace

h2_session::h2_session(const http2_limits& limits, h2_events& events)
  : events_(events),
    limits_(limits),
    resets_(static_cast<double>(limits.max_resets_per_second),
            static_cast<double>(limits.max_resets_per_second)),
    control_(static_cast<double>(limits.max_control_frames_per_second),
             static_cast<double>(limits.max_control_frames_per_second)),
    codec_(http2::h2_role::server, settings_of(limits), *this) {}

h2_session::~h2_session() = default;

bool h2_session::receive(const std::uint8_t* data, std::size_t size) {
  if (abuse_ != h2_abuse::none)
    return false;
  if (!codec_.receive(data, size)) {
    // The codec has queued its GOAWAY (PROTOCOL_ERROR, or ENHANCE_YOUR_CALM for a flood).
    if (abuse_ == h2_abuse::none)
      switch (codec_.failure().kind) {
        case http2::h2_failure::flood: abuse_ = h2_abuse::ack_flood; break;
        case http2::h2_failure::continuations: abuse_ = h2_abuse::continuation_flood; break;
        default: abuse_ = h2_abuse::protocol_error; break;
      }
    return false;
  }
  return abuse_ == h2_abuse::none;
}

bool h2_session::produce(std::string& out, std::size_t max) {
  return codec_.produce(out, max);
}

void h2_session::respond(std::int32_t stream,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         bool has_body) {
  fields_.clear();
  for (const auto& [name, value] : headers)
    fields_.push_back({name, value});
  codec_.submit_response(stream, fields_, has_body);
}

void h2_session::resume(std::int32_t stream) {
  codec_.resume(stream);
}

void h2_session::reset(std::int32_t stream, std::uint32_t error_code) {
  codec_.reset(stream, error_code);
}

void h2_session::shut_down() {
  codec_.goaway(h2_code::no_error);
}

void h2_session::refuse(h2_abuse why) {
  if (abuse_ != h2_abuse::none)
    return;
  abuse_ = why;
  codec_.terminate(h2_code::enhance_your_calm);
}

} // namespace gather
