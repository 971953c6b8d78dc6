// One loop's pool without a socket (origin_pool.hpp): links moved between the lists of their
// states by their machines' one observer, exactly one list holding each link, a closed link
// forgotten and handed back; per origin both protocols' links, the one ALPN probe and its waiting
// transfers, an http/1.1 answer remembered for downstream_alpn_memory_ms and forgotten after it
// (0: never remembered); the ready HTTP/1.1 links bounded per loop. Time is a value the test moves.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "gather/downstream/h1/h1_link.hpp"
#include "gather/downstream/pool/origin_pool.hpp"

using namespace std::chrono_literals;
using gather::link_bounds;
using gather::link_machine;
using gather::link_state;

namespace {

/// A link as a pool holds it: its machine, whose observer moves it in `lists`.
struct pooled_test_link {
  link_machine machine;
  explicit pooled_test_link(link_machine::time_point now) : machine(link_bounds{60000ms, 1000ms}, now) {}
};

using test_lists = gather::link_lists<std::shared_ptr<pooled_test_link>>;

/// A new link in `lists`, watched as the pool watches its links.
std::shared_ptr<pooled_test_link> pooled_link_in(test_lists& lists, link_machine::time_point now,
                                                 std::shared_ptr<pooled_test_link>* closed = nullptr) {
  auto link = std::make_shared<pooled_test_link>(now);
  auto* raw = link.get();
  link->machine.watch([&lists, raw, closed](link_state from, link_state to) {
    auto gone = lists.move(raw, from, to);
    if (closed && gone)
      *closed = std::move(gone);
  });
  lists.add(link->machine.state(), link);
  return link;
}

/// In which lists `link` is (each link must be in exactly one, its machine's state's).
int lists_holding(const test_lists& lists, const pooled_test_link* link) {
  int n = 0;
  for (const auto state : {link_state::connecting, link_state::ready, link_state::busy, link_state::draining})
    for (const auto& held : lists[state])
      n += held.get() == link ? 1 : 0;
  return n;
}

bool listed_as(const test_lists& lists, const pooled_test_link* link, link_state state) {
  for (const auto& held : lists[state])
    if (held.get() == link)
      return lists_holding(lists, link) == 1;
  return false;
}

} // namespace

TEST_CASE("origin pool: an HTTP/2 link moves through the lists of its states, each link in one list", "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_lists lists;
  std::shared_ptr<pooled_test_link> closed;
  auto link = pooled_link_in(lists, t0, &closed);
  auto other = pooled_link_in(lists, t0);
  CHECK(lists.size() == 2);
  CHECK(listed_as(lists, link.get(), link_state::connecting));
  link->machine.settings(2, t0 + 1ms); // the server's SETTINGS: 2 streams
  CHECK(listed_as(lists, link.get(), link_state::ready));
  CHECK(listed_as(lists, other.get(), link_state::connecting)); // another link's move is its own
  link->machine.opened(1);
  CHECK(listed_as(lists, link.get(), link_state::ready));
  link->machine.opened(3);
  CHECK(listed_as(lists, link.get(), link_state::busy));
  link->machine.ended(1, t0 + 2ms);
  CHECK(listed_as(lists, link.get(), link_state::ready));
  link->machine.goaway(3, t0 + 3ms);
  CHECK(listed_as(lists, link.get(), link_state::draining));
  CHECK(lists.size() == 2);
  link->machine.lost();
  CHECK(lists_holding(lists, link.get()) == 0); // forgotten,
  CHECK(closed == link);                        // and handed back to be let go when it is safe
  CHECK(lists.size() == 1);
  other->machine.lost();
  CHECK(lists.empty());
}

TEST_CASE("origin pool: an HTTP/1.1 connection is a link of the same lists, ready when idle, busy with its request",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_lists lists;
  auto link = pooled_link_in(lists, t0);
  gather::h1_link::made(link->machine, link_bounds{60000ms, 1000ms}, t0); // (a new machine: watched again)
  auto* raw = link.get();
  link->machine.watch([&lists, raw](link_state from, link_state to) { lists.move(raw, from, to); });
  CHECK(listed_as(lists, raw, link_state::connecting));
  gather::h1_link::sending(link->machine);
  CHECK(listed_as(lists, raw, link_state::busy));
  CHECK(gather::h1_link::answered(link->machine, true, false, t0 + 1ms));
  CHECK(listed_as(lists, raw, link_state::ready));
  gather::h1_link::sending(link->machine);
  CHECK(listed_as(lists, raw, link_state::busy));
  CHECK_FALSE(gather::h1_link::answered(link->machine, false, false, t0 + 2ms)); // Connection: close
  CHECK(listed_as(lists, raw, link_state::draining));
}

TEST_CASE("origin pool: a move from a list that does not hold the link changes nothing", "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_lists lists;
  auto a = std::make_shared<pooled_test_link>(t0);
  auto b = std::make_shared<pooled_test_link>(t0);
  lists.add(link_state::ready, a);
  lists.add(link_state::closed, b); // a closed link is not kept
  CHECK(lists.size() == 1);
  CHECK_FALSE(lists.move(b.get(), link_state::ready, link_state::closed));
  CHECK_FALSE(lists.move(a.get(), link_state::busy, link_state::ready));
  CHECK(listed_as(lists, a.get(), link_state::ready));
  CHECK_FALSE(lists.move(a.get(), link_state::closed, link_state::ready));
  CHECK(lists.move(a.get(), link_state::ready, link_state::closed) == a);
  CHECK(lists.empty());
  int seen = 0;
  lists.each([&](auto&) { ++seen; });
  CHECK(seen == 0);
}

using test_pool = gather::loop_pool<std::unique_ptr<int>, std::shared_ptr<pooled_test_link>, std::shared_ptr<int>>;

TEST_CASE("loop pool: an http/1.1 answer of ALPN is remembered for downstream_alpn_memory_ms, then asked again",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_pool pool(gather::pool_bounds{{}, 60000ms});
  const std::string a = "https://a.example:443";
  const std::string b = "https://b.example:443";
  CHECK_FALSE(pool.speaks_h1(a, t0));
  CHECK(pool.origins() == 0); // asking makes nothing
  pool.chose_h1(a, t0);
  CHECK(pool.speaks_h1(a, t0 + 59999ms));
  CHECK_FALSE(pool.speaks_h1(b, t0));
  pool.forget_if_empty(a, t0 + 1s);
  CHECK(pool.origins() == 1); // the answer is kept while it counts
  CHECK_FALSE(pool.speaks_h1(a, t0 + 60000ms)); // its time is up: forgotten, asked again
  CHECK_FALSE(pool.speaks_h1(a, t0 + 1s));
  pool.forget_if_empty(a, t0 + 1s);
  CHECK(pool.origins() == 0);
  pool.chose_h1(b, t0);
  pool.chose_h1(b, t0 + 10s); // a later answer counts from its own time
  CHECK(pool.speaks_h1(b, t0 + 65s));
  pool.forget_if_empty(b, t0 + 70s); // past it: nothing left to keep b for
  CHECK(pool.origins() == 0);
  SECTION("0: nothing remembered") {
    test_pool never(gather::pool_bounds{{}, 0ms});
    never.chose_h1(a, t0);
    CHECK_FALSE(never.speaks_h1(a, t0));
    CHECK(never.origins() == 0);
  }
}

TEST_CASE("loop pool: one ALPN probe per origin, the transfers that come meanwhile wait for its answer",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_pool pool(gather::pool_bounds{});
  const std::string a = "https://a.example:443";
  auto first = std::make_shared<int>(1);
  auto second = std::make_shared<int>(2);
  auto third = std::make_shared<int>(3);
  CHECK(pool.join_probe(a, first)); // no probe in flight: it makes one
  CHECK_FALSE(pool.join_probe(a, second));
  CHECK_FALSE(pool.join_probe(a, third));
  CHECK(pool.join_probe("https://b.example:443", first)); // another origin has its own
  pool.forget_if_empty(a, t0);
  CHECK(pool.origins() == 2); // a probe in flight keeps its origin
  const auto waiting = pool.end_probe(a);
  REQUIRE(waiting.size() == 2);
  CHECK(waiting[0] == second); // in the order they came
  CHECK(waiting[1] == third);
  CHECK(pool.end_probe(a).empty()); // the probe is over: nothing waits
  CHECK(pool.join_probe(a, second)); // the next one makes the next probe
  CHECK(pool.end_probe(a).empty());
  pool.forget_if_empty(a, t0);
  CHECK(pool.origins() == 1);
}

TEST_CASE("loop pool: ready HTTP/1.1 links, newest taken first, bounded per loop over every origin, swept in order",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_pool pool(gather::pool_bounds{{}, 60000ms, 3});
  const std::string a = "http://a.example:80";
  const std::string b = "http://b.example:80";
  CHECK_FALSE(pool.take_h1(a));
  CHECK(pool.origins() == 0);
  for (int i = 1; i <= 2; ++i) {
    auto link = std::make_unique<int>(i);
    REQUIRE(pool.give_back_h1(a, link));
    CHECK_FALSE(link); // the pool's now
  }
  auto link_b = std::make_unique<int>(10);
  REQUIRE(pool.give_back_h1(b, link_b));
  auto beyond = std::make_unique<int>(11);
  CHECK_FALSE(pool.give_back_h1(b, beyond)); // 3 ready already, all origins together
  REQUIRE(beyond);                           // still the caller's, to close
  CHECK(*beyond == 11);
  CHECK(pool.h1_ready() == 3);
  auto taken = pool.take_h1(a);
  REQUIRE(taken);
  CHECK(*taken == 2); // the newest: the most likely alive
  CHECK(pool.h1_ready() == 2);
  REQUIRE(pool.give_back_h1(b, beyond)); // room again
  std::vector<int> kept;
  pool.sweep_h1(
      [&](std::unique_ptr<int>& link) {
        if (*link == 10)
          return false; // b's older one is due
        kept.push_back(*link);
        return true;
      },
      t0);
  CHECK(pool.h1_ready() == 2);
  CHECK(kept.size() == 2);
  taken = pool.take_h1(b);
  REQUIRE(taken);
  CHECK(*taken == 11);
  CHECK_FALSE(pool.take_h1(b));
  pool.sweep_h1([](std::unique_ptr<int>&) { return false; }, t0); // every one due: every origin forgotten
  CHECK(pool.h1_ready() == 0);
  CHECK(pool.origins() == 0);
}

TEST_CASE("loop pool: one origin holds both protocols' links, and is forgotten only when both are gone",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  test_pool pool(gather::pool_bounds{});
  const std::string key = "https://both.example:443";
  auto& origin = pool.at(key);
  auto h2 = pooled_link_in(origin.h2, t0);
  auto h1 = std::make_unique<int>(1);
  REQUIRE(pool.give_back_h1(key, h1));
  CHECK(pool.find(key) == &origin);
  h2->machine.lost(); // the HTTP/2 link closed: its list forgets it
  CHECK(origin.h2.empty());
  pool.forget_if_empty(key, t0);
  REQUIRE(pool.find(key) != nullptr); // the HTTP/1.1 link still ready there
  CHECK(pool.take_h1(key));
  pool.forget_if_empty(key, t0);
  CHECK(pool.find(key) == nullptr);
}
