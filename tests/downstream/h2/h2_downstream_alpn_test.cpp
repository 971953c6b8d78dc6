// The HTTP/2 downstream client over https: ALPN's h2 or HTTP/1.1, its memory, the pool's probe.
//
// The downstream client over HTTP/2 (stream_call.hpp, transfer_request::http2) against h2_server.py
// (python3-h2) over TLS with ALPN, and cpp-httplib's TLS server, which speaks no h2, for the fall
// back to HTTP/1.1. Every call ends as stream_call.hpp says by its timeout, and the client holds
// nothing afterwards (inflight() back to 0).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"

#include "support/h2_downstream_server.hpp"
#include "support/ports.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"
#include "downstream/h2/h2_downstream_test_support.hpp"

using namespace std::chrono_literals;
using namespace gather;
using gather::test::h2_downstream_server;
using namespace gather::test::h2_downstream_support;

TEST_CASE("https with ALPN: h2 when the server chooses it, HTTP/1.1 when it does not", "[h2-downstream]") {
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  downstream_client client; // its TLS contexts read SSL_CERT_FILE now
  SECTION("h2 by ALPN") {
    h2_downstream_server server({"--tls", files.cert, files.key});
    const auto r = h2_fetch(client, server.url("/item", "https"));
    CHECK(r.error == transfer_error::none);
    CHECK(r.http_status == 200);
    CHECK(server.line_with("REQUEST").find("/item") != std::string::npos);
    CHECK(start_call(client, stream_get(server.url("/trailers", "https")))->wait().how == stream_ending::complete);
  }
  SECTION("a server without h2: the transfer goes over HTTP/1.1, a call (which needs h2) ends connection") {
    h1_only_tls_server server(files, [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    const std::string url = server.url;
    SECTION("transfers first") {
      for (int i = 0; i < 2; ++i) { // the first through the ALPN probe, the second remembered
        const auto r = h2_fetch(client, url);
        CHECK(r.error == transfer_error::none);
        CHECK(r.body == R"({"ok":1})");
      }
      // The pool remembers the answer: the call ends without a connection of its own.
      const auto end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("chose HTTP/1.1 by ALPN (remembered") != std::string::npos);
    }
    SECTION("a call first") {
      // Its own link asks ALPN; the answer is the pool's: the next call does not ask again, and
      // a transfer goes over HTTP/1.1 without a probe.
      auto end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("did not choose h2 by ALPN") != std::string::npos);
      end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("chose HTTP/1.1 by ALPN (remembered") != std::string::npos);
      CHECK(h2_fetch(client, url).body == R"({"ok":1})");
    }
  }
  client_is_empty(client);
}

TEST_CASE("an HTTP/1.1-only TLS origin with http2: calls at once all answered, its links pooled and closed when idle",
          "[h2-downstream]") {
  // The connections ALPN made HTTP/1.1 are links of the one HTTP/1.1 pool (h1_link.hpp): reused
  // while ready, closed after downstream_idle_timeout_ms. The server tells them apart by the
  // client's port.
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  std::mutex mutex;
  std::vector<int> ports; // per request, in arrival order
  h1_only_tls_server server(files, [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      ports.push_back(req.remote_port);
    }
    res.set_content(R"({"ok":1})", "application/json");
  }, 48);
  const std::string url = server.url;
  const auto ports_seen = [&] {
    std::lock_guard lock(mutex);
    return ports;
  };
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{300ms, 1000ms}});
    // 24 at once, the first ones through the ALPN answer: none lost, none failed.
    constexpr int at_once = 24;
    std::vector<std::promise<transfer_result>> promises(at_once);
    for (auto& promise : promises) {
      transfer_request request{url, {}, 3s, 1 << 20};
      request.http2 = true;
      client.submit(std::move(request), [&promise](transfer_result&& r) { promise.set_value(std::move(r)); });
    }
    for (auto& promise : promises) {
      auto future = promise.get_future();
      REQUIRE(future.wait_for(8s) == std::future_status::ready);
      const auto r = future.get();
      INFO(r.detail);
      CHECK(r.error == transfer_error::none);
      CHECK(r.http_status == 200);
      CHECK(r.body == R"({"ok":1})");
    }
    const auto first = ports_seen();
    CHECK(first.size() == static_cast<std::size_t>(at_once)); // one request each: none sent twice
    CHECK(client.inflight() == 0); // each counted once, through the hand-over to HTTP/1.1
    const std::set<int> pooled(first.begin(), first.end());
    // One after another at once: each on a connection of the pool, none new.
    for (int i = 0; i < 4; ++i)
      CHECK(h2_fetch(client, url).http_status == 200);
    const auto reused = ports_seen();
    for (std::size_t i = first.size(); i < reused.size(); ++i)
      CHECK(pooled.count(reused[i]) == 1);
    // Past the idle bound the pool has closed them: the next call comes on a new connection.
    std::this_thread::sleep_for(700ms); // (the bound under test is time: 300 ms, then slack)
    CHECK(h2_fetch(client, url).http_status == 200);
    const auto after = ports_seen();
    REQUIRE(after.size() == reused.size() + 1);
    CHECK(pooled.count(after.back()) == 0);
    client_is_empty(client);
  }
  loops.stop();
}

TEST_CASE("downstream_alpn_memory_ms: an origin whose ALPN chose HTTP/1.1 is remembered for it, or asked every time",
          "[h2-downstream]") {
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  std::mutex mutex;
  std::set<int> ports; // the connections the origin saw
  h1_only_tls_server server(files, [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      ports.insert(req.remote_port);
    }
    res.set_content(R"({"ok":1})", "application/json");
  });
  const auto connections = [&] {
    std::lock_guard lock(mutex);
    return ports.size();
  };
  io_loops loops(1);
  loops.start();
  for (const auto memory : {60000ms, 0ms}) {
    INFO("downstream_alpn_memory_ms " << memory.count());
    {
      std::lock_guard lock(mutex);
      ports.clear();
    }
    downstream_client client(loops, gather::pool_bounds{{60000ms, 1000ms}, memory});
    for (int i = 0; i < 3; ++i)
      CHECK(h2_fetch(client, server.url).http_status == 200);
    // Remembered: the next calls take the pooled HTTP/1.1 connection. Not: each offers h2 on a new
    // connection, which ALPN makes HTTP/1.1 again.
    CHECK(connections() == (memory.count() > 0 ? 1u : 3u));
    client_is_empty(client);
  }
  loops.stop();
}

TEST_CASE("an https origin that chooses h2 by ALPN: transfers made while the pool asked go on its one connection",
          "[h2-downstream][pool]") {
  // The pool's probe connection is filed as an HTTP/2 link and the transfers that waited for its
  // answer are its calls: one connection, one request each, each counted once.
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  h2_downstream_server server({"--tls", files.cert, files.key});
  downstream_client client;
  constexpr int at_once = 8;
  std::atomic<int> ok{0}, runs{0};
  for (int i = 0; i < at_once; ++i)
    client.submit(http2_transfer(server.url("/item", "https"), 3s), [&](transfer_result&& r) {
      ok += r.http_status == 200 && r.error == transfer_error::none ? 1 : 0;
      ++runs;
    });
  REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 8s));
  CHECK(ok.load() == at_once);
  CHECK(client.inflight() == 0);
  CHECK(server.line_with("CONN").find("CONN 1") != std::string::npos);
  for (int i = 0; i < at_once; ++i)
    CHECK(server.line_with("REQUEST").find("REQUEST 1 ") != std::string::npos);
  // Later transfers find the link: still the one connection.
  CHECK(h2_fetch(client, server.url("/item", "https")).http_status == 200);
  CHECK(server.line_with("REQUEST").find("REQUEST 1 ") != std::string::npos);
  CHECK_FALSE(server.process.wait_for_line("CONN 2", std::chrono::milliseconds(200)));
  client_is_empty(client);
}

TEST_CASE("the pool asks ALPN once per origin: a probe that ends without an answer passes the question on",
          "[h2-downstream][pool]") {
  SECTION("cancelled while its handshake hangs: the next waiting transfer makes the next probe") {
    gather::test::silent_server silent; // accepts, never speaks: the TLS handshake waits
    const std::string url = "https://127.0.0.1:" + std::to_string(silent.port()) + "/x";
    downstream_client client;
    std::atomic<int> runs{0};
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 3; ++i)
      ids.push_back(client.submit(http2_transfer(url, 10s), counted(runs)));
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 1; }));
    CHECK(client.inflight() == 3); // one connection: the other two wait for its answer
    client.cancel(ids[0]);
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 2; }));
    client.cancel(ids[1]);
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 3; }));
    client.cancel(ids[2]);
    client_is_empty(client);
    CHECK(runs.load() == 0);
  }
  SECTION("refused: each waiting transfer fails on its own attempt, none waits out its timeout") {
    const std::string url = "https://127.0.0.1:" + std::to_string(gather::test::unused_port()) + "/x";
    downstream_client client;
    constexpr int at_once = 4;
    std::atomic<int> refused{0}, runs{0};
    for (int i = 0; i < at_once; ++i)
      client.submit(http2_transfer(url, 10s), [&](transfer_result&& r) {
        refused += r.error == transfer_error::connect ? 1 : 0;
        ++runs;
      });
    REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 5s));
    CHECK(refused.load() == at_once);
    client_is_empty(client);
  }
}
