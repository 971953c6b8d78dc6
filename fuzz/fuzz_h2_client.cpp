// Fuzzes the HTTP/2 codec's client end (app/http2/h2_codec.cpp: what every downstream h2_link
// runs) on a server's whole byte stream: three requests are submitted (two GETs and a POST with a
// body), what the client has to send is taken after every read (and dropped: no server reads it
// here), and the input is received as the server's bytes, cut into reads as byte 0 seeds.
// Invariants: the codec neither crashes nor leaks; every event carries its own stream's data (a
// request's tag, none for a stream the client never opened) and none comes for a stream after its
// close; a stream closes once; a failure has words; and what each stream saw (its head, later
// blocks, body) is the same however the bytes are cut into reads.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "read_cuts.hpp"
#include "gather/http2/h2_codec.hpp"

namespace {

using namespace gather::http2;

/// One stream as the client's events told it.
struct answer_seen {
  std::vector<std::pair<std::string, std::string>> head, later;
  std::string body;
  bool closed = false;
  /// How and when a stream closed is not compared: a reset the codec sends lands where the reads
  /// were cut (fuzz_h2.cpp says the same of the server end). What a caller would read is.
  bool operator==(const answer_seen& o) const { return head == o.head && later == o.later && body == o.body; }
  bool empty() const { return head.empty() && later.empty() && body.empty(); }
};

struct client_end final : h2_codec_events {
  int tags[3] = {};
  std::map<std::int32_t, void*> expected; ///< each submitted stream's data
  std::map<std::int32_t, answer_seen> streams;
  std::string post_body = std::string(40000, 'p'); ///< more than the first window
  std::size_t post_sent = 0;

  void saw(std::int32_t stream, void* data) {
    const auto it = expected.find(stream);
    FUZZ_CHECK(data == (it == expected.end() ? nullptr : it->second));
    FUZZ_CHECK(!streams[stream].closed);
  }
  void header(std::int32_t stream, void* data, h2_block kind, std::string_view name, std::string_view value) override {
    saw(stream, data);
    (kind == h2_block::later ? streams[stream].later : streams[stream].head).emplace_back(name, value);
  }
  void headers_end(std::int32_t stream, void* data, h2_block, bool) override { saw(stream, data); }
  void data(std::int32_t stream, void* data, std::string_view bytes) override {
    saw(stream, data);
    streams[stream].body.append(bytes);
  }
  void data_end(std::int32_t stream, void* data) override { saw(stream, data); }
  void reset(std::int32_t stream, void* data, std::uint32_t) override { saw(stream, data); }
  void stream_closed(std::int32_t stream, void* data, std::uint32_t) override {
    saw(stream, data);
    streams[stream].closed = true;
  }
  long body_bytes(std::int32_t stream, void* data, std::uint8_t* out, std::size_t room, h2_body_end& end) override {
    saw(stream, data);
    FUZZ_CHECK(data == &tags[2]); // only the POST has a body
    const std::size_t n = std::min(room, post_body.size() - post_sent);
    std::copy_n(post_body.data() + post_sent, n, out);
    post_sent += n;
    end = post_sent == post_body.size() ? h2_body_end::last : h2_body_end::more;
    return static_cast<long>(n);
  }
};

struct run_seen {
  std::map<std::int32_t, answer_seen> streams;
  bool failed = false;
  /// Acknowledgements piled up unread: whether they do depends on when the output was taken,
  /// between which reads, so a run that flooded is not compared.
  bool flooded = false;
};

run_seen run(const std::string& bytes, fuzz::read_cuts cut) {
  client_end events;
  run_seen out;
  {
    h2_settings settings;
    settings.initial_window_bytes = 1 << 20;
    settings.max_header_list_bytes = 65536;
    settings.connection_window_bytes = 16 << 20;
    h2_codec codec(h2_role::client, settings, events);
    const h2_field get[] = {{":method", "GET"}, {":scheme", "http"}, {":authority", "d"}, {":path", "/a"}};
    const h2_field post[] = {{":method", "POST"}, {":scheme", "http"}, {":authority", "d"}, {":path", "/b"},
                             {"content-type", "application/grpc"}, {"te", "trailers"}};
    for (int i = 0; i < 3; ++i) {
      const auto id = i < 2 ? codec.submit_request(get, 4, false, &events.tags[i])
                            : codec.submit_request(post, 6, true, &events.tags[i]);
      FUZZ_CHECK(id == 1 + 2 * i);
      events.expected[id] = &events.tags[i];
    }
    std::string sent;
    FUZZ_CHECK(codec.produce(sent, 1 << 20));
    std::size_t at = 0;
    while (at < bytes.size()) {
      const std::size_t n = cut.next(bytes.size() - at);
      const bool ok = codec.receive(reinterpret_cast<const std::uint8_t*>(bytes.data()) + at, n);
      at += n;
      sent.clear();
      codec.produce(sent, 65536);
      if (!ok) {
        out.failed = true;
        out.flooded = codec.failure().kind == h2_failure::flood;
        FUZZ_CHECK(codec.failure().kind != h2_failure::none);
        break;
      }
    }
    do {
      sent.clear();
      codec.produce(sent, 65536);
    } while (!sent.empty());
    if (codec.failure().kind != h2_failure::none)
      FUZZ_CHECK(!codec.failure().text.empty());
  }
  // A stream that read nothing is not compared either (one closed by a reset that left in one run
  // only has a record, empty, in that run alone).
  for (auto& [id, seen] : events.streams)
    if (!seen.empty())
      out.streams.emplace(id, std::move(seen));
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto whole = run(bytes, {0});
  const auto pieces = run(bytes, {data[0] | 1u});
  if (whole.flooded || pieces.flooded)
    return 0;
  FUZZ_CHECK(whole.failed == pieces.failed);
  if (!(whole.streams == pieces.streams))
    std::fprintf(stderr, "the streams differ between the whole read and pieces (failed %d)\n", whole.failed);
  FUZZ_CHECK(whole.streams == pieces.streams);
  return 0;
}
