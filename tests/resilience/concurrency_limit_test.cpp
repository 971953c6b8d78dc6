// The bulkhead's slot (include/gather/resilience/concurrency_limit.hpp): taken once, given back
// exactly once by whoever holds it last, whatever way the call ends.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "gather/resilience/concurrency_limit.hpp"
#include "gather/values/section_outcome.hpp"

using gather::concurrency_limit;

TEST_CASE("a bulkhead slot is given back once, by its last holder", "[unit]") {
  concurrency_limit limit{2};
  {
    auto first = limit.try_take();
    auto second = limit.try_take();
    REQUIRE(first);
    REQUIRE(second);
    CHECK(limit.in_flight() == 2);
    CHECK_FALSE(limit.try_take()); // full: refused, nothing taken
    CHECK(limit.in_flight() == 2);

    concurrency_limit::slot moved = std::move(*first); // moved-from holds nothing
    first.reset();
    CHECK(limit.in_flight() == 2);

    std::vector<concurrency_limit::slot> calls;
    calls.push_back(std::move(moved));
    calls.push_back(std::move(*second));
    calls.erase(calls.begin()); // a call that ended
    CHECK(limit.in_flight() == 1);
    auto third = limit.try_take();
    REQUIRE(third);
    third->reset();
    third->reset(); // a second reset gives nothing back twice
    CHECK(limit.in_flight() == 1);
  }
  CHECK(limit.in_flight() == 0);
}

TEST_CASE("an unlimited bulkhead hands out empty slots and counts nothing", "[unit]") {
  concurrency_limit unlimited{0};
  std::vector<concurrency_limit::slot> slots;
  for (int i = 0; i < 5; ++i) {
    auto slot = unlimited.try_take();
    REQUIRE(slot);
    slots.push_back(std::move(*slot));
  }
  CHECK(unlimited.in_flight() == 0);
  slots.clear();
  CHECK(unlimited.in_flight() == 0);
}

TEST_CASE("why a call was not made reads as the log's names", "[unit]") {
  using gather::not_made_reason;
  CHECK(std::string{to_string(not_made_reason::none)}.empty());
  CHECK(std::string{to_string(not_made_reason::max_concurrent)} == "max_concurrent");
  CHECK(std::string{to_string(not_made_reason::circuit_open)} == "circuit_open");
  CHECK(std::string{to_string(not_made_reason::retry_budget)} == "retry_budget");
}
