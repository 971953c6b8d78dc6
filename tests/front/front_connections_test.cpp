// Connection limits: the keep-alive idle timeout and max_connections.
//
// The event-driven front (include/gather/front/) against real gateways over real loopback
// sockets: HTTP/1.0 framing, the keep-alive idle timeout, Expect: 100-continue, inbound TLS,
// max_connections, a burst of 1,000 connections on a fresh process, 10,000 idle connections, and
// the config keys behind it all. Timing margins hold on a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include "front/front_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::front_support;

// ---- 2. keep-alive idle timeout -------------------------------------------------------------------

TEST_CASE("keep_alive_idle_ms: an idle connection is closed after it, a busy one stays open", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url(), {{"keep_alive_idle_ms", 300}})};

  SECTION("idle after one answered request") {
    raw_connection conn{gw.port()};
    REQUIRE(conn.send(get_head("/p")));
    auto r = conn.read_response();
    REQUIRE(r);
    check_p_answer(*r);
    CHECK(r->header("connection").empty()); // HTTP/1.1: kept alive without saying so
    const auto answered = clock_type::now();
    CHECK(conn.wait_closed(milliseconds{5000}));
    const auto idle_for = ms_since(answered);
    CHECK(idle_for >= 250);
    CHECK(idle_for < 3000);
  }
  SECTION("never sends a byte") {
    const auto opened = clock_type::now();
    raw_connection conn{gw.port()};
    CHECK(conn.wait_closed(milliseconds{5000}));
    const auto idle_for = ms_since(opened);
    CHECK(idle_for >= 250);
    CHECK(idle_for < 3000);
  }
  SECTION("a request every 100 ms for 1 s") {
    raw_connection conn{gw.port()};
    const auto start = clock_type::now();
    int answered = 0;
    while (ms_since(start) < 1000) {
      REQUIRE(conn.send(get_head("/p")));
      auto r = conn.read_response();
      REQUIRE(r);
      check_p_answer(*r);
      ++answered;
      std::this_thread::sleep_for(milliseconds{100}); // the client's pace, not a synchronisation
    }
    CHECK(answered >= 5);
    CHECK_FALSE(conn.closed_now());
    REQUIRE(conn.send(get_head("/p")));
    auto r = conn.read_response();
    REQUIRE(r);
    check_p_answer(*r);
    // Then idle: closed in its turn.
    CHECK(conn.wait_closed(milliseconds{5000}));
  }
}

// ---- 5. max_connections --------------------------------------------------------------------------

TEST_CASE("max_connections: one connection over the limit is closed at once, the others are served", "[front]") {
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url(), {{"max_connections", 5}})};
  std::vector<std::unique_ptr<raw_connection>> conns;
  for (int i = 0; i < 5; ++i) {
    conns.push_back(std::make_unique<raw_connection>(gw.port()));
    REQUIRE(conns.back()->send(get_head("/p")));
    auto r = conns.back()->read_response();
    REQUIRE(r); // answered: surely accepted
    check_p_answer(*r);
  }

  {
    raw_connection sixth{gw.port()}; // the kernel completes the handshake; the gateway closes it
    const auto start = clock_type::now();
    bool closed = false;
    const std::string bytes = read_until_closed(sixth.fd(), milliseconds{2000}, closed);
    CHECK(closed);
    CHECK(bytes.empty());
    CHECK(ms_since(start) < 2000);
  }

  REQUIRE(conns[0]->send(get_head("/p")));
  auto still = conns[0]->read_response();
  REQUIRE(still);
  check_p_answer(*still);

  auto stats = debug_actors(*conns[1]);
  REQUIRE(stats);
  INFO(stats->dump());
  CHECK(stats->value("connections", -1) == 5);
  CHECK(stats->value("connections_refused", 0) >= 1);
  CHECK(stats->value("io_threads", 0) == 1);

  // One leaves: a new connection is taken again.
  conns[4]->close();
  CHECK(eventually([&] {
    auto now = debug_actors(*conns[1]);
    return now && now->value("connections", -1) == 4;
  }));
  raw_connection next{gw.port()};
  REQUIRE(next.send(get_head("/p")));
  auto r = next.read_response();
  REQUIRE(r);
  check_p_answer(*r);
}
