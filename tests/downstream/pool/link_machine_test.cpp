// The pooled link's state machine (link_machine.hpp) without a socket: every transition, a reset
// stream's slot and the link it retires, GOAWAY with streams above and below its last id, a link
// going quiet, the idle bound; and an HTTP/1.1 connection as a link of capacity one (h1_link.hpp):
// from connecting through its request to ready (idle), the idle bound, the reasons it drains
// instead of being reused (Connection: close, its endpoint left, its age). Time is a value the
// test moves.
#include <catch2/catch.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "gather/downstream/h1/h1_link.hpp"
#include "gather/downstream/pool/link_machine.hpp"

using namespace std::chrono_literals;
using gather::link_bounds;
using gather::link_due;
using gather::link_machine;
using gather::link_state;

namespace {

/// A machine at t0 that records its transitions.
struct watched_link {
  link_machine::time_point t0 = link_machine::clock::now();
  link_machine machine;
  std::vector<std::pair<link_state, link_state>> moves;
  explicit watched_link(link_bounds bounds = {60000ms, 1000ms}) : machine(bounds, t0) {
    machine.watch([this](link_state from, link_state to) { moves.emplace_back(from, to); });
  }
  link_machine::time_point at(std::chrono::milliseconds after) const { return t0 + after; }
  /// SETTINGS with `streams`, at t0.
  watched_link& heard(std::uint32_t streams) {
    machine.settings(streams, t0);
    return *this;
  }
};

} // namespace

TEST_CASE("link machine: connecting takes streams to wait, up to the assumed limit", "[unit][downstream]") {
  watched_link link;
  REQUIRE(link.machine.state() == link_state::connecting);
  REQUIRE(link.machine.limit() == link_machine::assumed_streams);
  for (std::uint32_t i = 0; i < link_machine::assumed_streams; ++i) {
    REQUIRE(link.machine.takes_stream());
    link.machine.wait_added();
  }
  REQUIRE_FALSE(link.machine.takes_stream());
  REQUIRE(link.machine.state() == link_state::connecting); // waiting is not busy: nothing is sent yet
  REQUIRE(link.moves.empty());
}

TEST_CASE("link machine: SETTINGS make it ready, or busy when the waiting calls fill it", "[unit][downstream]") {
  SECTION("ready") {
    watched_link link;
    link.machine.wait_added();
    link.heard(10);
    REQUIRE(link.machine.state() == link_state::ready);
    REQUIRE(link.moves == std::vector<std::pair<link_state, link_state>>{{link_state::connecting, link_state::ready}});
  }
  SECTION("busy") {
    watched_link link;
    for (int i = 0; i < 3; ++i)
      link.machine.wait_added();
    link.heard(2);
    REQUIRE(link.machine.state() == link_state::busy);
    REQUIRE(link.moves.back() == std::pair{link_state::ready, link_state::busy});
    link.machine.wait_removed(link.t0); // that call went to another link
    link.machine.wait_removed(link.t0);
    REQUIRE(link.machine.state() == link_state::ready);
  }
}

TEST_CASE("link machine: busy at the server's limit, ready again when the server ends a stream", "[unit][downstream]") {
  watched_link link;
  link.heard(2);
  link.machine.opened(1);
  REQUIRE(link.machine.state() == link_state::ready);
  link.machine.opened(3);
  REQUIRE(link.machine.state() == link_state::busy);
  REQUIRE_FALSE(link.machine.takes_stream());
  link.machine.ended(1, link.at(5ms));
  REQUIRE(link.machine.state() == link_state::ready);
  REQUIRE(link.machine.takes_stream());
  // A later SETTINGS lowers the limit: busy at once.
  link.machine.settings(1, link.at(6ms));
  REQUIRE(link.machine.state() == link_state::busy);
}

TEST_CASE("link machine: a stream the gateway reset keeps its slot while the connection lives", "[unit][downstream]") {
  watched_link link;
  link.heard(4);
  for (std::int32_t id : {1, 3, 5})
    link.machine.opened(id);
  link.machine.reset(1, link.at(1ms));
  REQUIRE(link.machine.open_streams() == 2);
  REQUIRE(link.machine.held_slots() == 1);
  REQUIRE(link.machine.in_use() == 3);
  REQUIRE(link.machine.state() == link_state::ready);
  link.machine.opened(7);
  REQUIRE(link.machine.state() == link_state::busy); // 3 open + 1 held: the server's 4
  // Time frees nothing: nothing says when the server let a reset stream go.
  REQUIRE(link.machine.due(link.at(1h)) == link_due::nothing);
  REQUIRE(link.machine.state() == link_state::busy);
  link.machine.ended(3, link.at(1h));
  REQUIRE(link.machine.state() == link_state::ready);
  REQUIRE(link.machine.held_slots() == 1);
}

TEST_CASE("link machine: a link holding half its limit in reset slots is retired, with no quiet bound",
          "[unit][downstream]") {
  watched_link link({60000ms, 200ms});
  link.heard(4);
  for (std::int32_t id : {1, 3, 5})
    link.machine.opened(id);
  link.machine.reset(1, link.at(1ms));
  REQUIRE(link.machine.state() == link_state::ready);
  link.machine.reset(3, link.at(2ms)); // 2 of 4 held
  REQUIRE(link.machine.state() == link_state::draining);
  REQUIRE_FALSE(link.machine.takes_stream());
  REQUIRE(link.machine.held_slots() == 0); // nothing to hold on a link that opens no stream again
  // Stream 5 takes its time: a retired link's streams are not cut by the quiet bound.
  REQUIRE_FALSE(link.machine.next_check());
  REQUIRE(link.machine.due(link.at(10s)) == link_due::nothing);
  link.machine.ended(5, link.at(10s));
  REQUIRE(link.machine.due(link.at(10s)) == link_due::drained);
  // The server's GOAWAY on it later brings the quiet bound back.
  watched_link other({60000ms, 200ms});
  other.heard(4);
  other.machine.opened(1);
  other.machine.drain(other.t0);
  other.machine.goaway(1, other.at(5ms));
  REQUIRE(other.machine.next_check() == other.at(205ms));
  REQUIRE(other.machine.due(other.at(205ms)) == link_due::quiet);
}

TEST_CASE("link machine: a server that ends a stream frees its slot at once", "[unit][downstream]") {
  watched_link link;
  link.heard(1);
  link.machine.opened(1);
  link.machine.ended(1, link.at(1ms)); // END_STREAM, RST_STREAM from it, or a refusal
  REQUIRE(link.machine.held_slots() == 0);
  REQUIRE(link.machine.state() == link_state::ready);
}

TEST_CASE("link machine: GOAWAY drains it, streams above the last id end, the ones below are awaited",
          "[unit][downstream]") {
  watched_link link;
  link.heard(100);
  for (std::int32_t id : {1, 3, 5, 7})
    link.machine.opened(id);
  link.machine.reset(9, link.at(1s)); // not open: nothing held
  link.machine.goaway(3, link.at(10ms));
  REQUIRE(link.machine.state() == link_state::draining);
  REQUIRE_FALSE(link.machine.takes_stream());
  // The session ends 5 and 7 (refused: they are sent again elsewhere).
  link.machine.ended(5, link.at(10ms));
  link.machine.ended(7, link.at(10ms));
  REQUIRE(link.machine.due(link.at(20ms)) == link_due::nothing);
  link.machine.frame(link.at(300ms)); // 3's answer comes on
  link.machine.ended(3, link.at(300ms));
  REQUIRE(link.machine.due(link.at(900ms)) == link_due::nothing);
  link.machine.ended(1, link.at(950ms));
  REQUIRE(link.machine.due(link.at(950ms)) == link_due::drained);
  link.machine.lost();
  REQUIRE(link.machine.state() == link_state::closed);
  REQUIRE(link.moves == std::vector<std::pair<link_state, link_state>>{{link_state::connecting, link_state::ready},
                                                                       {link_state::ready, link_state::draining},
                                                                       {link_state::draining, link_state::closed}});
}

TEST_CASE("link machine: a draining link whose streams get no frame for drain_quiet is due to close", "[unit][downstream]") {
  watched_link link({60000ms, 200ms});
  link.heard(100);
  link.machine.opened(1);
  link.machine.opened(3);
  link.machine.goaway(3, link.at(0ms));
  REQUIRE(link.machine.next_check() == link.at(200ms));
  REQUIRE(link.machine.due(link.at(199ms)) == link_due::nothing);
  link.machine.frame(link.at(150ms)); // a DATA frame for 1: the bound starts again
  REQUIRE(link.machine.next_check() == link.at(350ms));
  REQUIRE(link.machine.due(link.at(349ms)) == link_due::nothing);
  REQUIRE(link.machine.due(link.at(350ms)) == link_due::quiet);
}

TEST_CASE("link machine: the gateway's own drain and the transport's loss", "[unit][downstream]") {
  SECTION("drain while held slots wait: nothing is held on a link that opens no stream again") {
    watched_link link;
    link.heard(10);
    link.machine.opened(1);
    link.machine.reset(1, link.at(1ms));
    REQUIRE(link.machine.held_slots() == 1);
    link.machine.drain(link.at(1ms));
    REQUIRE(link.machine.state() == link_state::draining);
    REQUIRE(link.machine.held_slots() == 0);
    REQUIRE(link.machine.due(link.at(1ms)) == link_due::drained);
  }
  SECTION("lost while connecting") {
    watched_link link;
    link.machine.wait_added();
    link.machine.lost();
    REQUIRE(link.machine.state() == link_state::closed);
    REQUIRE_FALSE(link.machine.next_check());
    link.machine.settings(10, link.t0); // a late event changes nothing
    link.machine.drain(link.t0);
    REQUIRE(link.machine.state() == link_state::closed);
    REQUIRE(link.moves.size() == 1);
  }
  SECTION("draining never goes back") {
    watched_link link;
    link.heard(10);
    link.machine.drain(link.t0);
    link.machine.settings(20, link.t0);
    REQUIRE(link.machine.state() == link_state::draining);
  }
}

TEST_CASE("link machine: a ready link with no slot counted for idle_timeout is due to close", "[unit][downstream]") {
  SECTION("idle from its last stream's end") {
    watched_link link({1000ms, 1000ms});
    link.heard(10);
    link.machine.opened(1);
    REQUIRE_FALSE(link.machine.next_check());
    link.machine.ended(1, link.at(100ms));
    REQUIRE(link.machine.next_check() == link.at(1100ms));
    REQUIRE(link.machine.due(link.at(1099ms)) == link_due::nothing);
    REQUIRE(link.machine.due(link.at(1100ms)) == link_due::idle);
  }
  SECTION("a held slot is not idle") {
    watched_link link({1000ms, 1000ms});
    link.heard(10);
    link.machine.opened(1);
    link.machine.reset(1, link.at(1ms));
    REQUIRE_FALSE(link.machine.next_check());
    REQUIRE(link.machine.due(link.at(5000ms)) == link_due::nothing);
  }
  SECTION("0: never") {
    watched_link link({0ms, 1000ms});
    link.heard(10);
    REQUIRE_FALSE(link.machine.next_check());
    REQUIRE(link.machine.due(link.at(100h)) == link_due::nothing);
  }
}

TEST_CASE("link machine: past max_age a link takes no new stream and closes once its streams end", "[unit][downstream][upstreams]") {
  watched_link link(link_bounds{60000ms, 1000ms, 500ms});
  link.heard(100);
  link.machine.opened(1);
  REQUIRE(link.machine.next_check() == link.at(500ms)); // the age bound is a check of its own
  CHECK(link.machine.due(link.at(499ms)) == link_due::nothing);
  CHECK(link.machine.state() == link_state::ready);
  CHECK(link.machine.due(link.at(500ms)) == link_due::nothing); // its stream still runs
  CHECK(link.machine.state() == link_state::draining);
  CHECK_FALSE(link.machine.takes_stream());
  link.machine.ended(1, link.at(600ms));
  CHECK(link.machine.due(link.at(600ms)) == link_due::drained);
  // Without max_age (0) a link lives on.
  watched_link ageless;
  ageless.heard(100);
  ageless.machine.opened(1);
  CHECK(ageless.machine.due(ageless.at(3600000ms)) == link_due::nothing);
  CHECK(ageless.machine.state() == link_state::ready);
}

// An HTTP/1.1 connection as a link (h1_link.hpp).

namespace h1_link = gather::h1_link;

namespace {

/// An HTTP/1.1 link made at t0 whose transitions are recorded.
struct recorded_h1_link {
  link_machine::time_point t0 = link_machine::clock::now();
  link_machine link{link_bounds{}, t0};
  std::vector<std::pair<link_state, link_state>> moves;
  explicit recorded_h1_link(link_bounds bounds = {60000ms, 1000ms, 0ms}) {
    h1_link::made(link, bounds, t0);
    link.watch([this](link_state from, link_state to) { moves.emplace_back(from, to); });
  }
  link_machine::time_point at(std::chrono::milliseconds after) const { return t0 + after; }
  /// One request sent and answered (keep-alive) at `after`; whether it may be reused.
  bool request(std::chrono::milliseconds after) {
    h1_link::sending(link);
    return h1_link::answered(link, true, false, at(after));
  }
};

} // namespace

TEST_CASE("h1 link: made connecting with its transfer waiting, busy with its request, ready once answered",
          "[unit][downstream]") {
  recorded_h1_link l;
  CHECK(l.link.state() == link_state::connecting);
  CHECK(l.link.in_use() == 1); // the transfer that made it
  h1_link::sending(l.link);
  CHECK(l.link.state() == link_state::busy);
  CHECK(l.link.limit() == h1_link::capacity);
  CHECK(l.link.open_streams() == 1);
  CHECK(h1_link::answered(l.link, true, false, l.at(5ms)));
  CHECK(l.link.state() == link_state::ready);
  CHECK(l.link.in_use() == 0);
  CHECK(l.link.takes_stream());
  const std::vector<std::pair<link_state, link_state>> expected{
    {link_state::connecting, link_state::ready}, {link_state::ready, link_state::busy}, {link_state::busy, link_state::ready}};
  CHECK(l.moves == expected);
  SECTION("taken again from the ready list: busy, then ready") {
    h1_link::sending(l.link);
    CHECK(l.link.state() == link_state::busy);
    CHECK(h1_link::answered(l.link, true, false, l.at(10ms)));
    CHECK(l.link.state() == link_state::ready);
  }
}

TEST_CASE("h1 link: a ready link with no request for its idle bound is due to close, 0 is never",
          "[unit][downstream]") {
  SECTION("idle bound 100 ms") {
    recorded_h1_link l({100ms, 1000ms, 0ms});
    REQUIRE(l.request(10ms));
    REQUIRE(l.link.next_check().has_value());
    CHECK(*l.link.next_check() == l.at(110ms));
    CHECK(l.link.due(l.at(109ms)) == link_due::nothing);
    CHECK(l.link.due(l.at(110ms)) == link_due::idle);
  }
  SECTION("a request in between restarts it") {
    recorded_h1_link l({100ms, 1000ms, 0ms});
    REQUIRE(l.request(10ms));
    h1_link::sending(l.link);
    CHECK(l.link.due(l.at(200ms)) == link_due::nothing); // busy: never idle
    REQUIRE(h1_link::answered(l.link, true, false, l.at(200ms)));
    CHECK(l.link.due(l.at(299ms)) == link_due::nothing);
    CHECK(l.link.due(l.at(300ms)) == link_due::idle);
  }
  SECTION("downstream_idle_timeout_ms 0") {
    recorded_h1_link l({0ms, 1000ms, 0ms});
    REQUIRE(l.request(10ms));
    CHECK_FALSE(l.link.next_check().has_value());
    CHECK(l.link.due(l.at(3600000ms)) == link_due::nothing);
  }
}

TEST_CASE("h1 link: Connection: close, bytes after the answer or a retired endpoint drain it instead of reuse",
          "[unit][downstream]") {
  recorded_h1_link l;
  h1_link::sending(l.link);
  const bool endpoint_left = GENERATE(false, true);
  const bool reusable = endpoint_left; // one reason at a time: Connection: close, or the endpoint left
  CHECK_FALSE(h1_link::answered(l.link, reusable, endpoint_left, l.at(5ms)));
  CHECK(l.link.state() == link_state::draining);
  CHECK(l.link.due(l.at(5ms)) == link_due::drained);
  CHECK_FALSE(l.link.takes_stream());
  l.link.lost();
  CHECK(l.link.state() == link_state::closed);
  CHECK(l.moves.back() == std::pair{link_state::draining, link_state::closed});
}

TEST_CASE("h1 link: past max_connection_age_ms it is not reused, and a ready one is due to close",
          "[unit][downstream][upstreams]") {
  SECTION("answered after its age") {
    recorded_h1_link l({60000ms, 1000ms, 100ms});
    CHECK(l.request(50ms));
    CHECK_FALSE(l.request(150ms));
    CHECK(l.link.state() == link_state::draining);
  }
  SECTION("aging while ready") {
    recorded_h1_link l({60000ms, 1000ms, 100ms});
    REQUIRE(l.request(50ms));
    REQUIRE(l.link.next_check().has_value());
    CHECK(*l.link.next_check() == l.at(100ms)); // the age comes before the idle bound
    CHECK(l.link.due(l.at(99ms)) == link_due::nothing);
    CHECK(l.link.due(l.at(100ms)) == link_due::drained);
    CHECK(l.link.state() == link_state::draining);
  }
}

TEST_CASE("h1 link: an upstream endpoint's bounds, else the pool's", "[unit][downstream][upstreams]") {
  const link_bounds pool{60000ms, 1000ms, 0ms};
  CHECK(h1_link::bounds_of(nullptr, pool).idle_timeout == 60000ms);
  auto endpoint = std::make_shared<gather::call_target>();
  endpoint->bounds.idle_timeout = 5000ms;
  endpoint->bounds.max_age = 600000ms;
  const std::shared_ptr<const gather::call_target> target = endpoint;
  CHECK(h1_link::bounds_of(target, pool).idle_timeout == 5000ms);
  CHECK(h1_link::bounds_of(target, pool).max_age == 600000ms);
}
