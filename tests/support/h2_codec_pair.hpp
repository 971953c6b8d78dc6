// Two ends of an HTTP/2 connection in memory, for the codec's tests (tests/http2/): each end a
// codec (app/http2/h2_codec.cpp) and a record of every event it told, the bytes carried between
// them by the test, and raw frames for what no codec would send.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gather/http2/h2_codec.hpp"

namespace gather::test {

using http2::h2_block;
using http2::h2_body_end;
using http2::h2_codec;
using http2::h2_codec_events;
using http2::h2_defer;
using http2::h2_field;
using http2::h2_role;
using http2::h2_settings;

/// One stream as an end's events told it.
struct codec_stream {
  std::vector<std::pair<std::string, std::string>> head, later;
  std::string body;
  std::vector<void*> data_seen; ///< the stream data every event of it carried
  bool head_done = false, later_done = false, ended = false, closed = false;
  bool ends_with_head = false;
  std::uint32_t reset_code = 0xffffffff, close_code = 0xffffffff;
  std::size_t largest_chunk = 0;
  // What this end sends on the stream (a request's or an answer's body).
  std::string out;
  std::size_t out_at = 0;
  bool defer = false;    ///< h2_defer when `out` is used up (more comes)
  bool trailers = false; ///< end with trailers instead of END_STREAM on the last DATA
};

/// One end of a connection: its codec and everything it was told.
struct codec_end final : h2_codec_events {
  explicit codec_end(h2_role role, h2_settings settings = {}) : codec(role, settings, *this) {}

  std::map<std::int32_t, codec_stream> streams;
  std::vector<std::int32_t> opened; ///< a server's streams, in order
  std::vector<std::pair<std::int32_t, bool>> not_sent;
  std::vector<std::uint32_t> settings_seen;
  std::vector<std::pair<std::int32_t, std::uint32_t>> goaways;
  bool inside_every_event = true;
  bool receive_ok = true;

  void* stream_opened(std::int32_t stream) override {
    opened.push_back(stream);
    return &streams[stream]; // a server's stream data: its record here
  }
  void saw(std::int32_t stream, void* data) {
    inside_every_event = inside_every_event && codec.inside();
    streams[stream].data_seen.push_back(data);
  }
  void header(std::int32_t stream, void* data, h2_block kind, std::string_view name, std::string_view value) override {
    saw(stream, data);
    (kind == h2_block::later ? streams[stream].later : streams[stream].head).emplace_back(name, value);
  }
  void headers_end(std::int32_t stream, void* data, h2_block kind, bool ends) override {
    saw(stream, data);
    auto& s = streams[stream];
    (kind == h2_block::later ? s.later_done : s.head_done) = true;
    if (kind != h2_block::later)
      s.ends_with_head = ends;
    if (ends)
      s.ended = true;
  }
  void data(std::int32_t stream, void* data, std::string_view bytes) override {
    saw(stream, data);
    streams[stream].body.append(bytes);
    streams[stream].largest_chunk = std::max(streams[stream].largest_chunk, bytes.size());
  }
  void data_end(std::int32_t stream, void* data) override {
    saw(stream, data);
    streams[stream].ended = true;
  }
  void reset(std::int32_t stream, void* data, std::uint32_t code) override {
    saw(stream, data);
    streams[stream].reset_code = code;
  }
  void stream_closed(std::int32_t stream, void* data, std::uint32_t code) override {
    saw(stream, data);
    streams[stream].closed = true;
    streams[stream].close_code = code;
  }
  void request_not_sent(std::int32_t stream, bool refused, const char*) override {
    not_sent.emplace_back(stream, refused);
  }
  long body_bytes(std::int32_t stream, void* data, std::uint8_t* out, std::size_t room, h2_body_end& end) override {
    saw(stream, data);
    auto& s = streams[stream];
    const std::size_t n = std::min(room, s.out.size() - s.out_at);
    if (n == 0 && s.defer)
      return h2_defer;
    std::copy_n(s.out.data() + s.out_at, n, out);
    s.out_at += n;
    end = h2_body_end::more;
    if (s.out_at == s.out.size() && !s.defer) {
      end = s.trailers ? h2_body_end::trailers : h2_body_end::last;
      if (s.trailers) {
        const std::vector<h2_field> fields = {{"grpc-status", "0"}};
        codec.submit_trailers(stream, fields);
      }
    }
    return static_cast<long>(n);
  }
  void settings(std::uint32_t max_concurrent_streams) override { settings_seen.push_back(max_concurrent_streams); }
  void goaway(std::int32_t last_stream, std::uint32_t code, std::string_view) override {
    goaways.emplace_back(last_stream, code);
  }

  /// What this end has to send now.
  std::string take() {
    std::string out;
    REQUIRE(codec.produce(out, std::numeric_limits<std::size_t>::max()));
    return out;
  }
  void give(const std::string& bytes) {
    receive_ok = codec.receive(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) && receive_ok;
  }
  std::int32_t request(const std::string& method, const std::string& path, void* data, std::string body = {}) {
    const std::vector<h2_field> fields = {
      {":method", method}, {":scheme", "http"}, {":authority", "downstream"}, {":path", path}, {"x-test", "yes"}};
    const auto id = codec.submit_request(fields, !body.empty(), data);
    if (id > 0)
      streams[id].out = std::move(body);
    return id;
  }
  void answer(std::int32_t stream, std::string body, bool trailers = false) {
    auto& s = streams[stream];
    s.out = std::move(body);
    s.trailers = trailers;
    const std::vector<h2_field> fields = {{":status", "200"}, {"content-type", "text/plain"}};
    REQUIRE(codec.submit_response(stream, fields, !s.out.empty() || trailers));
  }

  h2_codec codec; ///< last: its events are this end's members
};

/// Carries bytes both ways until neither end has any to send.
inline void codec_exchange(codec_end& a, codec_end& b) {
  for (int round = 0; round < 100000; ++round) {
    const auto ab = a.take();
    const auto ba = b.take();
    if (ab.empty() && ba.empty())
      return;
    if (!ab.empty())
      b.give(ab);
    if (!ba.empty())
      a.give(ba);
  }
  FAIL("the two ends never fell quiet");
}

/// A raw frame (RFC 9113 4.1), for what no codec would send.
inline std::string codec_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string& payload) {
  std::string f;
  const auto n = payload.size();
  f += static_cast<char>((n >> 16) & 0xff);
  f += static_cast<char>((n >> 8) & 0xff);
  f += static_cast<char>(n & 0xff);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  for (int shift = 24; shift >= 0; shift -= 8)
    f += static_cast<char>((stream >> shift) & 0xff);
  return f + payload;
}

inline std::string codec_pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

inline std::string field_of(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& name) {
  for (const auto& [n, v] : fields)
    if (n == name)
      return v;
  return "(none)";
}

inline bool all_are(const std::vector<void*>& seen, void* data) {
  return !seen.empty() && std::all_of(seen.begin(), seen.end(), [&](void* d) { return d == data; });
}

} // namespace gather::test
