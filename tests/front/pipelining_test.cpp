// Pipelined requests (contract §3): on one connection, every request is answered in order and as
// if it had come alone, however its bytes were split across reads and segments. The same byte
// stream is sent every way it can arrive: one burst; bursts answered before the next is sent (a
// read ahead pending while the next requests are parsed: the case that once served a request
// with an earlier one's target and headers); segments that straddle the read buffer's size;
// random small segments; a burst that ends inside a request whose rest comes later. Every answer
// is checked against its own request: the path and forwarded headers the downstream saw, its
// X-Request-Id, a batch's items. Then the same for the values admission and the cache take from
// a request (the rate limit's key, the cache key), and 90 HTTP/2 streams on one connection.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// Answers /x/<anything> with the path and the headers it was called with.
struct echo_everything {
  // A thread per downstream connection (cpp-httplib holds one for a connection's keep-alive life):
  // the 90 h2 streams may open 90 at once, more than the default 64.
  test_server server{256};
  echo_everything() {
    server.get("/x/(.*)", [](const httplib::Request& req, httplib::Response& res) {
      json body = {{"path", req.path},
                   {"key", req.get_header_value("X-Api-Key")},
                   {"tenant", req.get_header_value("X-Tenant")}};
      res.set_content(body.dump(), "application/json");
    });
    server.start();
  }
};

/// /r/{id}: one section calling /x/{id}, forwarding x-api-key and x-tenant; /b: a batch of /x/{item}.
json pipelining_config(const std::string& base) {
  json cfg = route_config_json(
      "/r/{id}",
      {section("s", base + "/x/{id}", 5000,
               {{"required", true}, {"forward_headers", {"x-api-key", "x-tenant"}}})},
      10000, {{"max_inflight", 256}}); // 90 h2 streams run at once: none may be refused as overload
  cfg["routes"].push_back(
      {{"path", "/b"}, {"batch", {{"url", base + "/x/{item}"}, {"timeout_ms", 5000}}}});
  return cfg;
}

/// One request of a stream and what its answer must show.
struct planned {
  std::string bytes;
  std::string request_id;
  std::string path;                ///< a GET's: the downstream path its section must have called
  std::string key, tenant;         ///< a GET's forwarded headers
  std::vector<std::string> items;  ///< a batch POST's
  bool expects_continue = false;
};

std::string padding(std::mt19937& rng, std::size_t max) {
  const std::size_t sizes[] = {0, 1, 17, 500, 2000, 4000, 7000};
  std::size_t n = sizes[rng() % std::size(sizes)];
  return std::string(std::min(n, max), 'a' + static_cast<char>(rng() % 26));
}

planned get_request(int i, const std::string& key_padding, const std::string& prefix = "/r/") {
  planned p;
  p.request_id = "pipe-" + std::to_string(i);
  p.path = "/x/" + std::to_string(i);
  p.key = "k-" + std::to_string(i) + "-" + key_padding;
  p.tenant = "t-" + std::to_string(i);
  p.bytes = "GET " + prefix + std::to_string(i) + " HTTP/1.1\r\nHost: gw\r\nX-Request-Id: " + p.request_id +
            "\r\nX-Api-Key: " + p.key + "\r\nX-Tenant: " + p.tenant + "\r\n\r\n";
  return p;
}

/// A batch POST: Content-Length (kind 0), chunked in random pieces (1), or with Expect: 100-continue (2).
planned batch_request(int i, int kind, std::mt19937& rng) {
  planned p;
  p.request_id = "pipe-" + std::to_string(i);
  p.items = {"i" + std::to_string(i) + "a", "i" + std::to_string(i) + "b"};
  const std::string body = json{{"items", p.items}}.dump();
  std::string head = "POST /b HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nX-Request-Id: " +
                     p.request_id + "\r\nX-Pad: " + padding(rng, 7000) + "\r\n";
  if (kind == 1) {
    p.bytes = head + "Transfer-Encoding: chunked\r\n\r\n";
    std::size_t at = 0;
    while (at < body.size()) {
      const std::size_t n = std::min<std::size_t>(body.size() - at, 1 + rng() % 9);
      char size_line[16];
      std::snprintf(size_line, sizeof size_line, "%zx\r\n", n);
      p.bytes += size_line + body.substr(at, n) + "\r\n";
      at += n;
    }
    p.bytes += "0\r\n\r\n";
    return p;
  }
  if (kind == 2) {
    head += "Expect: 100-continue\r\n";
    p.expects_continue = true;
  }
  p.bytes = head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return p;
}

/// `n` requests: GETs with headers of 0 to 7,000 bytes, batch POSTs of every kind among them.
std::vector<planned> mixed_stream(int n, std::mt19937& rng) {
  std::vector<planned> out;
  for (int i = 0; i < n; ++i) {
    const auto roll = rng() % 8;
    out.push_back(roll < 5 ? get_request(i, padding(rng, 7000)) : batch_request(i, static_cast<int>(roll - 5), rng));
  }
  return out;
}

std::string bytes_of(const std::vector<planned>& stream, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  std::string all;
  for (std::size_t i = from; i < std::min(to, stream.size()); ++i)
    all += stream[i].bytes;
  return all;
}

/// A segment to write once `after` answers have been read, then a pause.
struct segment {
  std::string bytes;
  std::size_t after = 0;
  std::chrono::microseconds pause{0};
};

/// Writes the segments on a thread of their own while this one reads the answers (a client that
/// keeps writing while it reads, as a pipelining proxy does); the answers in order, 100s apart.
struct delivered {
  std::vector<raw_response> answers;
  int continues = 0;
};

delivered deliver(int port, const std::vector<segment>& plan, std::size_t expected) {
  raw_connection conn{port};
  std::mutex m;
  std::condition_variable cv;
  std::size_t read = 0;
  bool gave_up = false;
  std::thread writer([&] {
    for (const auto& s : plan) {
      {
        std::unique_lock lock{m};
        cv.wait(lock, [&] { return read >= s.after || gave_up; });
        if (gave_up)
          return;
      }
      if (!conn.send(s.bytes))
        return;
      if (s.pause.count() > 0)
        std::this_thread::sleep_for(s.pause); // a segment boundary in time, not a wait for the gateway
    }
  });
  delivered out;
  while (out.answers.size() < expected) {
    auto r = conn.read_response(std::chrono::seconds(15));
    if (!r)
      break;
    if (r->status == 100) {
      ++out.continues;
      continue;
    }
    out.answers.push_back(std::move(*r));
    std::lock_guard lock{m};
    read = out.answers.size();
    cv.notify_all();
  }
  {
    std::lock_guard lock{m};
    gave_up = true;
    cv.notify_all();
  }
  writer.join();
  return out;
}

/// The number of answers that are not their own request's; the first such one in `first_wrong`.
std::size_t wrong_answers(const std::vector<planned>& stream, const delivered& got, std::string& first_wrong) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const auto& want = stream[i];
    std::string why;
    if (i >= got.answers.size()) {
      why = "no answer";
    } else {
      const auto& r = got.answers[i];
      auto body = json::parse(r.body, nullptr, false);
      if (!body.is_object())
        why = "not JSON: " + r.body.substr(0, 200);
      else if (r.status != 200)
        why = "status " + std::to_string(r.status) + " " + r.body.substr(0, 200);
      else if (r.header("x-request-id") != want.request_id)
        why = "x-request-id " + r.header("x-request-id");
      else if (want.items.empty()) {
        const auto& data = body["data"]["s"];
        if (data["path"] != want.path || data["key"] != want.key || data["tenant"] != want.tenant)
          why = "downstream saw " + data["path"].dump() + " " + data["key"].dump().substr(0, 40) + " " +
                data["tenant"].dump();
      } else {
        const auto& rows = body["results"];
        if (!rows.is_array() || rows.size() != want.items.size())
          why = "batch rows " + rows.dump().substr(0, 200);
        else
          for (std::size_t j = 0; j < rows.size() && why.empty(); ++j)
            if (rows[j]["item"] != want.items[j] || rows[j]["data"]["path"] != "/x/" + want.items[j])
              why = "batch row " + rows[j].dump();
      }
    }
    if (!why.empty() && wrong++ == 0)
      first_wrong = "request " + std::to_string(i) + " (" + want.request_id + "): " + why;
  }
  return wrong;
}

std::size_t continues_expected(const std::vector<planned>& stream) {
  return static_cast<std::size_t>(
      std::count_if(stream.begin(), stream.end(), [](const planned& p) { return p.expects_continue; }));
}

/// Groups of `size` requests, each sent once every answer to the previous group has been read.
std::vector<segment> in_groups(const std::vector<planned>& stream, std::size_t size) {
  std::vector<segment> plan;
  for (std::size_t at = 0; at < stream.size(); at += size)
    plan.push_back({bytes_of(stream, at, at + size), at});
  return plan;
}

/// The whole stream in segments of the sizes given in turn (the last one takes what is left).
std::vector<segment> in_sizes(const std::string& all, const std::vector<std::size_t>& sizes,
                              std::chrono::microseconds pause = {}) {
  std::vector<segment> plan;
  for (std::size_t at = 0, k = 0; at < all.size(); ++k) {
    const auto n = std::min(sizes[k % sizes.size()], all.size() - at);
    plan.push_back({all.substr(at, n), 0, pause});
    at += n;
  }
  return plan;
}

} // namespace

TEST_CASE("pipelined HTTP/1.1 requests are each answered as if they had come alone, however their bytes arrive",
          "[front][pipelining]") {
  echo_everything down;
  running_gateway gw{pipelining_config(down.server.base_url())};
  std::mt19937 rng{20261204};

  // The read buffer holds a whole head at the limits plus one read: 8,192 + 16,384 + 16,384 + 4.
  constexpr std::size_t read_chunk = 16384, buffer = 8192 + 16384 + read_chunk + 4;

  SECTION("bursts of 50 with 2,000-byte headers, each sent once the previous one's answers are read") {
    std::vector<planned> stream;
    for (int i = 0; i < 200; ++i)
      stream.push_back(get_request(i, std::string(2000, 'a')));
    const auto got = deliver(gw.port(), in_groups(stream, 50), stream.size());
    std::string first;
    CHECK(wrong_answers(stream, got, first) == 0);
    INFO(first);
    CHECK(first.empty());
  }

  SECTION("bursts of 200 with 500-byte headers and of 20 with 2,000-byte headers") {
    for (const auto& [group, pad] : {std::pair<std::size_t, std::size_t>{200, 500}, {20, 2000}}) {
      std::vector<planned> stream;
      for (int i = 0; i < 400; ++i)
        stream.push_back(get_request(i, std::string(pad, 'b')));
      const auto got = deliver(gw.port(), in_groups(stream, group), stream.size());
      std::string first;
      INFO("groups of " << group);
      CHECK(wrong_answers(stream, got, first) == 0);
      INFO(first);
      CHECK(first.empty());
    }
  }

  SECTION("a mixed stream (GETs with 0 to 7,000-byte headers, Content-Length, chunked and 100-continue POSTs)") {
    const auto stream = mixed_stream(120, rng);
    const auto all = bytes_of(stream);
    const std::string how = GENERATE(as<std::string>{}, "one burst", "groups", "straddling the read buffer",
                                     "random small segments", "a burst ending inside a request");
    INFO(how);
    std::vector<segment> plan;
    if (how == "one burst") {
      plan = {{all, 0}};
    } else if (how == "groups") {
      plan = in_groups(stream, 7 + rng() % 30);
    } else if (how == "straddling the read buffer") {
      plan = in_sizes(all, {buffer - 1, buffer + 1, read_chunk - 1, read_chunk + 1, buffer, 2 * buffer + 3});
    } else if (how == "random small segments") {
      std::vector<std::size_t> sizes;
      for (int k = 0; k < 64; ++k)
        sizes.push_back(1 + rng() % 700);
      plan = in_sizes(all, sizes, std::chrono::microseconds(150));
    } else {
      // Cut inside request 60 at a random byte: the first 60 are answered, then the rest follows.
      const auto before = bytes_of(stream, 0, 60).size();
      const auto cut = before + 1 + rng() % (stream[60].bytes.size() - 1);
      plan = {{all.substr(0, cut), 0}, {all.substr(cut), 60}};
    }
    const auto got = deliver(gw.port(), plan, stream.size());
    std::string first;
    CHECK(wrong_answers(stream, got, first) == 0);
    INFO(first);
    CHECK(first.empty());
    CHECK(static_cast<std::size_t>(got.continues) == continues_expected(stream));
  }
}

TEST_CASE("a pipelined request's rate-limit key is its own header's", "[front][pipelining]") {
  echo_everything down;
  json cfg = pipelining_config(down.server.base_url());
  // One request per key in a very long time: a request counted under another's key gets 429.
  cfg["routes"][0]["rate_limit"] = {{"per", "header:x-api-key"}, {"rate_per_s", 0.001}, {"burst", 1}};
  running_gateway gw{cfg};
  std::vector<planned> stream;
  for (int i = 0; i < 240; ++i)
    stream.push_back(get_request(i, std::string(2000, 'c')));
  const auto got = deliver(gw.port(), in_groups(stream, 20), stream.size());
  std::string first;
  CHECK(wrong_answers(stream, got, first) == 0); // a 429 counts as a wrong answer
  INFO(first);
  CHECK(first.empty());
  // The limit does bite: key 0 again is refused.
  raw_connection again{gw.port()};
  REQUIRE(again.send(get_request(0, std::string(2000, 'c')).bytes));
  auto r = again.read_response();
  REQUIRE(r);
  CHECK(r->status == 429);
}

TEST_CASE("a pipelined request's cache key is made of its own forwarded headers", "[front][pipelining]") {
  echo_everything down;
  json cfg = pipelining_config(down.server.base_url());
  // Every request asks for the same id; only its tenant (a forwarded header) tells the entries apart.
  cfg["routes"][0]["sections"][0]["url"] = down.server.base_url() + "/x/same";
  cfg["routes"][0]["sections"][0]["forward_headers"] = {"x-tenant"};
  cfg["routes"][0]["sections"][0]["cache_ttl_ms"] = 600000;
  running_gateway gw{cfg};
  std::vector<planned> stream;
  for (int i = 0; i < 120; ++i) {
    auto p = get_request(i, std::string(3000, 'd'));
    p.path = "/x/same";
    p.key = ""; // not forwarded on this route
    stream.push_back(std::move(p));
  }
  for (const auto* round : {"misses", "hits"}) {
    INFO(round);
    const auto got = deliver(gw.port(), in_groups(stream, 40), stream.size());
    std::string first;
    CHECK(wrong_answers(stream, got, first) == 0);
    INFO(first);
    CHECK(first.empty());
    CHECK(down.server.calls() == 120); // one call per tenant, the second round all from the cache
  }
}

TEST_CASE("90 HTTP/2 streams on one connection are each answered as their own request", "[front][pipelining][h2]") {
  echo_everything down;
  running_gateway gw{pipelining_config(down.server.base_url())};
  const std::string segmented = GENERATE(as<std::string>{}, "0", "1");
  INFO((segmented == "1" ? "random segments" : "one write"));
  const auto r = run("/usr/bin/python3", {GATHER_SOURCE_DIR "/tests/front/h2_client.py", "pipeline",
                                          std::to_string(gw.port()), "/r/", "90", segmented, "7"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto out = r.out;
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  const auto answers = json::parse(out.substr(out.rfind('\n') + 1))["answers"];
  REQUIRE(answers.size() == 90);
  int wrong = 0;
  for (int i = 0; i < 90; ++i) {
    const auto& a = answers[static_cast<std::size_t>(i)];
    auto body = json::parse(a["body"].get<std::string>(), nullptr, false);
    const auto& data = body["data"]["s"];
    const bool own = a["status"] == 200 && a["request_id"] == "h2-" + std::to_string(i) &&
                     data["path"] == "/x/" + std::to_string(i) &&
                     data["key"].is_string() &&
                     data["key"].get<std::string>().rfind("k-" + std::to_string(i) + "-", 0) == 0;
    if (!own && wrong++ == 0)
      FAIL_CHECK("stream " << i << ": " << a.dump().substr(0, 300));
  }
  CHECK(wrong == 0);
}
