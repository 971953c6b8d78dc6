// Fuzzes the inbound HTTP/2 session (app/front/h2_session.cpp: libnghttp2 with Gather's bounds)
// on whole byte streams after the client preface, fed as a connection feeds it: what arrives is
// received, then what the session has to send is taken (and dropped: no client reads it here).
// Input: byte 0 seeds how the stream is cut into reads, the rest follows the preface.
// Invariants: the session neither crashes nor leaks; every stream's request (its header list,
// head and body ends, body bytes) is the same however the stream is cut into reads,
// so a stream's headers are its own whatever HPACK's dynamic table and the reads did between them.
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
#include "../app/front/h2_session.hpp" // private to the front; the fuzz target is its one other user

namespace {

/// One stream as the session told it.
struct stream_seen {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool opened = false, too_large = false, head_done = false, ends_stream = false, body_done = false;
  bool closed = false;
  std::uint32_t close_code = 0;
  /// How a stream closed is not compared: when a session's error lands is a matter of when its
  /// output was taken, between which reads (a reset sent after one piece, or a GOAWAY that came
  /// first when the bytes came whole: both found by this target). What is compared is what the
  /// gateway would serve.
  bool operator==(const stream_seen& o) const {
    return headers == o.headers && body == o.body && opened == o.opened && too_large == o.too_large &&
           head_done == o.head_done && ends_stream == o.ends_stream && body_done == o.body_done;
  }
};

struct recorder final : gather::h2_events {
  std::map<std::int32_t, stream_seen> streams;
  /// Every event carries the record its stream_opened returned (the stream's data in the codec).
  stream_seen& of(std::int32_t id, void* record) {
    FUZZ_CHECK(record == &streams[id]);
    return streams[id];
  }
  void* stream_opened(std::int32_t id) override {
    streams[id].opened = true;
    return &streams[id];
  }
  void header(std::int32_t id, void* record, std::string_view name, std::string_view value) override {
    of(id, record).headers.emplace_back(name, value);
  }
  void header_list_too_large(std::int32_t id, void* record) override { of(id, record).too_large = true; }
  void head_done(std::int32_t id, void* record, bool ends_stream) override {
    auto& s = of(id, record);
    s.head_done = true;
    s.ends_stream = ends_stream;
  }
  void body(std::int32_t id, void* record, std::string_view bytes) override { of(id, record).body.append(bytes); }
  void body_done(std::int32_t id, void* record) override { of(id, record).body_done = true; }
  void stream_closed(std::int32_t id, void* record, std::uint32_t code) override {
    if (!record) // a stream the session opened after its end was decided: no record
      return;
    auto& s = of(id, record);
    s.closed = true;
    s.close_code = code;
  }
  long answer_bytes(std::int32_t, void*, std::uint8_t*, std::size_t, bool&) override { return -1; }
};

struct seen {
  std::map<std::int32_t, stream_seen> streams;
  bool failed = false;
  gather::h2_abuse abuse = gather::h2_abuse::none;
};

seen run(const std::string& stream, fuzz::read_cuts cut) {
  gather::http2_limits limits;
  // Time must not decide: the rate bounds (token buckets on the clock) are out of reach here.
  limits.max_resets_per_second = 1000000000;
  limits.max_control_frames_per_second = 1000000000;
  recorder events;
  seen out;
  {
    gather::h2_session session{limits, events};
    std::string sent;
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t n = cut.next(stream.size() - at);
      const bool ok = session.receive(reinterpret_cast<const std::uint8_t*>(stream.data()) + at, n);
      at += n;
      sent.clear();
      session.produce(sent, 65536);
      if (!ok) {
        out.failed = true;
        break;
      }
    }
    do {
      sent.clear();
      session.produce(sent, 65536);
    } while (!sent.empty());
    out.abuse = session.abuse();
  }
  out.streams = std::move(events.streams);
  return out;
}

/// On a mismatch: what each run saw of the first stream they disagree on (stderr, before the abort).
void describe(const seen& a, const seen& b) {
  const auto print = [](const char* run, std::int32_t id, const stream_seen& s) {
    std::fprintf(stderr, "%s stream %d: %zu headers, body %zu bytes, opened %d too_large %d head_done %d "
                 "ends %d body_done %d closed %d code %u\n", run, id, s.headers.size(), s.body.size(),
                 s.opened, s.too_large, s.head_done, s.ends_stream, s.body_done, s.closed, s.close_code);
  };
  for (const auto& [id, s] : a.streams) {
    const auto it = b.streams.find(id);
    if (it == b.streams.end() || !(it->second == s)) {
      print("whole ", id, s);
      if (it != b.streams.end())
        print("pieces", id, it->second);
      return;
    }
  }
  for (const auto& [id, s] : b.streams)
    if (!a.streams.count(id))
      return print("pieces (only)", id, s);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const std::string stream =
      std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto whole = run(stream, {0});
  const auto pieces = run(stream, {data[0] | 1u});
  FUZZ_CHECK(whole.failed == pieces.failed);
  FUZZ_CHECK(whole.abuse == pieces.abuse);
  if (!(whole.streams == pieces.streams))
    describe(whole, pieces), std::fprintf(stderr, "failed %d/%d abuse %d\n", whole.failed, pieces.failed, static_cast<int>(whole.abuse));
  FUZZ_CHECK(whole.streams == pieces.streams);
  return 0;
}
