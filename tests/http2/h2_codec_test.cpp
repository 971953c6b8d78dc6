// The sans-IO HTTP/2 codec (app/http2/h2_codec.cpp) without a socket: a client codec and a server
// codec fed each other's bytes in memory. A request and its answer, each stream's data handed
// back, resets, GOAWAY with streams below and above its last stream id, the peer's
// MAX_CONCURRENT_STREAMS, flow control with bodies larger than every window, PING, and malformed
// frames from the peer (a clear failure, never a crash).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gather/http2/h2_codec.hpp"
#include "gather/values/h2_codes.hpp"

// Helpers in a namespace of their own: the unity build puts this file beside others.
namespace h2_codec_test {

using namespace gather::http2;
namespace h2_code = gather::h2_code;

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
  int pings_acked = 0;
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
  void ping_acked() override { ++pings_acked; }

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
void codec_exchange(codec_end& a, codec_end& b) {
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
std::string codec_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string& payload) {
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

std::string codec_pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

std::string field_of(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& name) {
  for (const auto& [n, v] : fields)
    if (n == name)
      return v;
  return "(none)";
}

bool all_are(const std::vector<void*>& seen, void* data) {
  return !seen.empty() && std::all_of(seen.begin(), seen.end(), [&](void* d) { return d == data; });
}

} // namespace h2_codec_test

TEST_CASE("h2 codec: a request and its answer, each stream's data handed back with its events", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  codec_end client(h2_role::client), server(h2_role::server);
  int tag = 0;
  const auto id = client.request("GET", "/item/1", &tag);
  REQUIRE(id == 1);
  codec_exchange(client, server);
  REQUIRE(server.opened == std::vector<std::int32_t>{1});
  auto& asked = server.streams[1];
  CHECK(field_of(asked.head, ":method") == "GET");
  CHECK(field_of(asked.head, ":path") == "/item/1");
  CHECK(field_of(asked.head, ":authority") == "downstream");
  CHECK(field_of(asked.head, "x-test") == "yes");
  CHECK(asked.head_done);
  CHECK(asked.ends_with_head); // a GET without a body: END_STREAM on its HEADERS
  CHECK(all_are(asked.data_seen, &asked)); // what stream_opened returned

  server.answer(1, "hello");
  codec_exchange(client, server);
  auto& got = client.streams[1];
  CHECK(field_of(got.head, ":status") == "200");
  CHECK(field_of(got.head, "content-type") == "text/plain");
  CHECK(got.body == "hello");
  CHECK(got.ended);
  CHECK(got.closed);
  CHECK(got.close_code == gather::h2_code::no_error);
  CHECK(all_are(got.data_seen, &tag)); // what submit_request was given
  CHECK(server.streams[1].closed);
  CHECK(client.inside_every_event);
  CHECK(server.inside_every_event);
  CHECK(client.codec.alive()); // the connection stays for the next request
  CHECK(server.codec.alive());
  CHECK(client.codec.failure().kind == h2_failure::none);

  SECTION("a POST with a body; an answer sent as it comes and ended by trailers") {
    int post = 0;
    const auto pid = client.request("POST", "/grpc.Method", &post, "request-bytes");
    codec_exchange(client, server);
    CHECK(server.streams[pid].body == "request-bytes");
    CHECK(server.streams[pid].ended);
    CHECK_FALSE(server.streams[pid].ends_with_head);
    auto& s = server.streams[pid];
    s.defer = true;
    server.answer(pid, "", true);
    codec_exchange(client, server);
    CHECK(client.streams[pid].head_done);
    CHECK_FALSE(client.streams[pid].closed); // the answer waits for its bytes
    s.out += "first;";
    server.codec.resume(pid);
    codec_exchange(client, server);
    CHECK(client.streams[pid].body == "first;");
    s.out += "second";
    s.defer = false;
    server.codec.resume(pid);
    codec_exchange(client, server);
    auto& answer = client.streams[pid];
    CHECK(answer.body == "first;second");
    CHECK(answer.later_done);
    CHECK(field_of(answer.later, "grpc-status") == "0");
    CHECK(answer.closed);
    CHECK(answer.close_code == gather::h2_code::no_error);
    CHECK(all_are(answer.data_seen, &post));
  }
  SECTION("a stream's data detached: its events carry none") {
    int gone = 0;
    const auto did = client.request("GET", "/later", &gone);
    codec_exchange(client, server);
    CHECK(client.codec.data_of(did) == &gone);
    client.codec.detach(did);
    CHECK(client.codec.data_of(did) == nullptr);
    server.answer(did, "ignored");
    codec_exchange(client, server);
    CHECK(all_are(client.streams[did].data_seen, nullptr));
    CHECK(client.streams[did].closed);
  }
}

TEST_CASE("h2 codec: a reset stream, by the client and by the server", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  codec_end client(h2_role::client), server(h2_role::server);
  int first = 0, second = 0;
  const auto a = client.request("GET", "/slow", &first);
  codec_exchange(client, server);
  REQUIRE(server.opened.size() == 1);
  REQUIRE(client.codec.has_stream(a));

  client.codec.reset(a, gather::h2_code::cancel);
  codec_exchange(client, server);
  CHECK(server.streams[a].reset_code == gather::h2_code::cancel);
  CHECK(server.streams[a].closed);
  CHECK(server.streams[a].close_code == gather::h2_code::cancel);
  CHECK(client.streams[a].closed);
  CHECK(client.streams[a].close_code == gather::h2_code::cancel);
  CHECK(client.streams[a].reset_code == 0xffffffff); // its own reset is not the peer's
  CHECK(all_are(client.streams[a].data_seen, &first));
  CHECK_FALSE(client.codec.has_stream(a));

  const auto b = client.request("GET", "/refused", &second);
  codec_exchange(client, server);
  server.codec.reset(b, gather::h2_code::refused_stream);
  codec_exchange(client, server);
  CHECK(client.streams[b].reset_code == gather::h2_code::refused_stream);
  CHECK(client.streams[b].closed);
  CHECK(client.streams[b].close_code == gather::h2_code::refused_stream);
  CHECK(all_are(client.streams[b].data_seen, &second));
  CHECK(client.codec.alive()); // a stream's reset is not the connection's
  CHECK(client.codec.failure().kind == h2_failure::none);
  CHECK(server.codec.failure().kind == h2_failure::none);
}

TEST_CASE("h2 codec: GOAWAY with streams below and above its last stream id", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  codec_end client(h2_role::client), server(h2_role::server);
  int tags[4] = {};
  const auto s1 = client.request("GET", "/1", &tags[0]);
  const auto s3 = client.request("GET", "/3", &tags[1]);
  codec_exchange(client, server);
  REQUIRE(server.opened == std::vector<std::int32_t>{s1, s3});
  // Two more leave the client while the server's GOAWAY is on its way: they cross.
  const auto s5 = client.request("GET", "/5", &tags[2]);
  const auto s7 = client.request("GET", "/7", &tags[3]);
  const auto crossing = client.take();
  server.codec.goaway(gather::h2_code::no_error);
  client.give(server.take());
  REQUIRE(client.goaways.size() == 1);
  CHECK(client.goaways[0] == std::pair<std::int32_t, std::uint32_t>{s3, gather::h2_code::no_error});
  for (const auto above : {s5, s7}) { // never processed: closed at once, REFUSED_STREAM, to be sent again
    INFO(above);
    CHECK(client.streams[above].closed);
    CHECK(client.streams[above].close_code == gather::h2_code::refused_stream);
    CHECK_FALSE(client.streams[above].head_done);
  }
  CHECK(all_are(client.streams[s5].data_seen, &tags[2]));
  CHECK_FALSE(client.streams[s1].closed); // at or below the last id: still to be answered
  CHECK_FALSE(client.streams[s3].closed);
  server.give(crossing); // the server takes no stream above the last id it named
  CHECK(server.opened == std::vector<std::int32_t>{s1, s3});

  server.answer(s1, "one");
  server.answer(s3, "three");
  codec_exchange(client, server);
  CHECK(client.streams[s1].body == "one");
  CHECK(client.streams[s3].body == "three");
  CHECK(client.streams[s3].close_code == gather::h2_code::no_error);
  CHECK(all_are(client.streams[s3].data_seen, &tags[1]));

  // No stream starts after a GOAWAY: refused at once or when it would have left.
  int late = 0;
  const auto s9 = client.request("GET", "/9", &late);
  codec_exchange(client, server);
  CHECK((s9 < 0 || client.not_sent == std::vector<std::pair<std::int32_t, bool>>{{s9, true}}));
  CHECK(server.opened.size() == 2);
  CHECK_FALSE(client.codec.alive()); // nothing in flight on a connection going away: it can close
  CHECK_FALSE(server.codec.alive());
}

TEST_CASE("h2 codec: the server's MAX_CONCURRENT_STREAMS holds the client's further streams", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  h2_settings limited;
  limited.max_concurrent_streams = 2;
  codec_end client(h2_role::client), server(h2_role::server, limited);
  CHECK(client.codec.peer_max_concurrent_streams() == 100); // until its SETTINGS: RFC 9113 5.1.2's floor
  codec_exchange(client, server);
  CHECK(client.settings_seen == std::vector<std::uint32_t>{2});
  CHECK(client.codec.peer_max_concurrent_streams() == 2);
  CHECK(server.settings_seen.size() == 1);

  int tags[3] = {};
  std::vector<std::int32_t> ids;
  for (auto& t : tags)
    ids.push_back(client.request("GET", "/n", &t));
  codec_exchange(client, server);
  CHECK(server.opened == std::vector<std::int32_t>{ids[0], ids[1]}); // the third waits in the client
  CHECK_FALSE(client.codec.has_stream(ids[2]));
  server.answer(ids[0], "a");
  codec_exchange(client, server);
  CHECK(server.opened == ids); // a slot freed: the third left
  server.answer(ids[1], "b");
  server.answer(ids[2], "c");
  codec_exchange(client, server);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(client.streams[ids[i]].close_code == gather::h2_code::no_error);
    CHECK(all_are(client.streams[ids[i]].data_seen, &tags[i]));
  }
}

TEST_CASE("h2 codec: flow control, bodies larger than every window, both ways", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  h2_settings small;
  small.initial_window_bytes = 16384;
  codec_end client(h2_role::client, small), server(h2_role::server, small);
  const auto up = codec_pattern(1 << 20), down = codec_pattern(3 << 19);
  int tag = 0;

  SECTION("a peer that reads takes it all, WINDOW_UPDATE by WINDOW_UPDATE") {
    const auto id = client.request("POST", "/upload", &tag, up);
    codec_exchange(client, server);
    CHECK(server.streams[id].body == up);
    CHECK(server.streams[id].ended);
    CHECK(server.streams[id].largest_chunk <= 16384); // one DATA frame at most at a time
    server.answer(id, down);
    codec_exchange(client, server);
    CHECK(client.streams[id].body == down);
    CHECK(client.streams[id].close_code == gather::h2_code::no_error);
  }
  SECTION("a peer that does not read: the sender stops at the windows") {
    codec_exchange(client, server); // SETTINGS both ways
    client.request("POST", "/upload", &tag, up);
    std::size_t sent = 0;
    for (int i = 0; i < 10; ++i)
      sent += client.take().size(); // never given to the server
    CHECK(sent < 16384 + 1024); // the stream's window and the frames' headers, not the megabyte
    CHECK(sent > 16000);
  }
}

TEST_CASE("h2 codec: a PING's round trip", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  codec_end client(h2_role::client), server(h2_role::server);
  codec_exchange(client, server);
  client.codec.ping();
  codec_exchange(client, server);
  CHECK(client.pings_acked == 1);
  CHECK(server.pings_acked == 0); // it answered; it asked nothing
}

TEST_CASE("h2 codec: malformed frames from the peer end the connection with a clear failure", "[unit][h2-codec]") {
  using namespace h2_codec_test;
  codec_end client(h2_role::client), server(h2_role::server);
  SECTION("not HTTP/2 at all") {
    server.give("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_FALSE(server.receive_ok);
    CHECK(server.codec.failure().kind == h2_failure::bad_preface);
    CHECK_FALSE(server.codec.failure().text.empty());
    CHECK(server.opened.empty());
  }
  SECTION("after the handshake") {
    int tag = 0;
    const auto id = client.request("GET", "/x", &tag);
    codec_exchange(client, server);
    REQUIRE(server.opened.size() == 1);
    std::uint32_t code = 0;
    SECTION("DATA on stream 0, to the server") {
      server.give(codec_frame(0x0, 0x0, 0, "x"));
      code = gather::h2_code::protocol_error;
    }
    SECTION("a SETTINGS frame of 5 bytes, to the server") {
      server.give(codec_frame(0x4, 0x0, 0, "12345"));
      code = 0x6; // FRAME_SIZE_ERROR
    }
    SECTION("a header block HPACK cannot decode, to the client") {
      client.give(codec_frame(0x1, 0x4, static_cast<std::uint32_t>(id), "\xff\xff\xff\xff\xff\xff"));
      code = 0x9; // COMPRESSION_ERROR
    }
    auto& failing = code == 0x9 ? client : server;
    auto& other = code == 0x9 ? server : client;
    const auto goaway = failing.take(); // the codec answers with GOAWAY
    CHECK_FALSE(goaway.empty());
    CHECK(failing.codec.failure().kind == h2_failure::protocol);
    CHECK(failing.codec.failure().code == code);
    CHECK_FALSE(failing.codec.failure().text.empty());
    CHECK_FALSE(failing.codec.alive());
    other.give(goaway);
    REQUIRE(other.goaways.size() == 1);
    CHECK(other.goaways[0].second == code);
    CHECK(other.codec.failure().kind == h2_failure::none); // the peer's GOAWAY is not its own failure
  }
  SECTION("a frame cut short, then nothing: no event, no failure") {
    codec_exchange(client, server);
    server.give(codec_frame(0x1, 0x5, 1, "\x82\x86\x84").substr(0, 7));
    CHECK(server.receive_ok);
    CHECK(server.opened.empty());
    CHECK(server.codec.failure().kind == h2_failure::none);
  }
}
