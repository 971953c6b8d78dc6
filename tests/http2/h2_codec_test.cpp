// The sans-IO HTTP/2 codec (app/http2/h2_codec.cpp) without a socket, its streams: a client codec
// and a server codec fed each other's bytes in memory (tests/support/h2_codec_pair.hpp). A request
// and its answer with each stream's data handed back, resets by either side, GOAWAY with streams
// below and above its last stream id, the peer's MAX_CONCURRENT_STREAMS. Its connection's flow
// control and failures: h2_codec_flow_test.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "gather/http2/h2_codec.hpp"
#include "gather/values/h2_codes.hpp"
#include "support/h2_codec_pair.hpp"

TEST_CASE("h2 codec: a request and its answer, each stream's data handed back with its events", "[unit][h2-codec]") {
  using namespace gather::test;
  using namespace gather::http2;
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
  using namespace gather::test;
  using namespace gather::http2;
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
  using namespace gather::test;
  using namespace gather::http2;
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
  using namespace gather::test;
  using namespace gather::http2;
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
