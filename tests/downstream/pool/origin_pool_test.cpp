// One origin's pool without a socket (origin_pool.hpp): links moved between the lists of their
// states by their machines' one observer, exactly one list holding each link, a closed link
// forgotten and handed back; and what an origin's server chose by ALPN, remembered for
// downstream_alpn_memory_ms and forgotten after it (0: never remembered). Time is a value the
// test moves.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "gather/downstream/h1/h1_link.hpp"
#include "gather/downstream/pool/origin_pool.hpp"

using namespace std::chrono_literals;
using gather::link_bounds;
using gather::link_machine;
using gather::link_state;
using gather::origin_protocol;

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

TEST_CASE("origin pool: what ALPN chose is remembered for downstream_alpn_memory_ms, then asked again",
          "[unit][pool]") {
  const auto t0 = link_machine::clock::now();
  gather::protocol_memory memory(60000ms);
  const std::string a = "https://a.example:443";
  const std::string b = "https://b.example:443";
  CHECK(memory.empty());
  CHECK(memory.of(a, t0) == origin_protocol::unknown);
  memory.chose(a, origin_protocol::h1, t0);
  memory.chose(b, origin_protocol::h2, t0);
  CHECK(memory.size() == 2);
  CHECK(memory.of(a, t0 + 59999ms) == origin_protocol::h1);
  CHECK(memory.of(b, t0 + 59999ms) == origin_protocol::h2);
  CHECK(memory.of("https://c.example:443", t0) == origin_protocol::unknown);
  CHECK(memory.of(a, t0 + 60000ms) == origin_protocol::unknown); // its time is up: forgotten
  CHECK(memory.size() == 1);
  CHECK(memory.of(a, t0 + 60001ms) == origin_protocol::unknown);
  memory.chose(b, origin_protocol::h1, t0 + 1s); // a later answer replaces the earlier one
  CHECK(memory.of(b, t0 + 60500ms) == origin_protocol::h1);
  memory.chose(b, origin_protocol::unknown, t0 + 2s);
  CHECK(memory.empty());
  SECTION("0: nothing remembered") {
    gather::protocol_memory never(0ms);
    never.chose(a, origin_protocol::h1, t0);
    CHECK(never.empty());
    CHECK(never.of(a, t0) == origin_protocol::unknown);
  }
  CHECK(to_string(origin_protocol::h1) == std::string("h1"));
  CHECK(to_string(origin_protocol::h2) == std::string("h2"));
  CHECK(to_string(origin_protocol::unknown) == std::string("unknown"));
}
