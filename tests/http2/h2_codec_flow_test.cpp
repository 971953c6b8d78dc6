// The sans-IO HTTP/2 codec (app/http2/h2_codec.cpp) without a socket, its connection: flow control
// with bodies larger than every window, PING, and malformed frames from the peer (a clear failure,
// never a crash). Its streams: h2_codec_test.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "gather/http2/h2_codec.hpp"
#include "gather/values/h2_codes.hpp"
#include "support/h2_codec_pair.hpp"

TEST_CASE("h2 codec: flow control, bodies larger than every window, both ways", "[unit][h2-codec]") {
  using namespace gather::test;
  using namespace gather::http2;
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

TEST_CASE("h2 codec: malformed frames from the peer end the connection with a clear failure", "[unit][h2-codec]") {
  using namespace gather::test;
  using namespace gather::http2;
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
