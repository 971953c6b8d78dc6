// The request record without a socket or an actor: finished once, counted once, slot given back.
#include <catch2/catch.hpp>

#include "gather/actors/request_record.hpp"
#include "support/serving_fixture.hpp"

namespace {

const char* one_route_config = R"({"routes": [{"path": "/p", "sections": [
  {"name": "a", "url": "http://127.0.0.1:1/a", "timeout_ms": 10, "fallback": 0}]}]})";

gather::request_record record_for(gather::test::serving_fixture& f, std::size_t route) {
  gather::request_record record{{&f.serving->counters, nullptr}, "id-1", "GET",
                                std::chrono::steady_clock::now(), {}, f.serving->cfg.routes.size()};
  if (route < f.serving->cfg.routes.size())
    record.set_route(route, f.serving->cfg.routes[route].path);
  return record;
}

} // namespace

TEST_CASE("inflight_slot: taken up to the limit, given back once however it ends", "[unit][record]") {
  std::atomic<std::int64_t> inflight{0};
  {
    auto a = gather::inflight_slot::try_take(inflight, 2);
    auto b = gather::inflight_slot::try_take(inflight, 2);
    auto c = gather::inflight_slot::try_take(inflight, 2);
    CHECK(a);
    CHECK(b);
    CHECK_FALSE(c);
    CHECK(inflight.load() == 2);
    auto moved = std::move(a);
    CHECK_FALSE(a);
    CHECK(inflight.load() == 2);
    moved.release();
    moved.release();
    CHECK(inflight.load() == 1);
    b = gather::inflight_slot::try_take(inflight, 2); // the old one is given back first
    CHECK(inflight.load() == 1);
  }
  CHECK(inflight.load() == 0);
}

TEST_CASE("request_record: finished once, counted once, its slot given back", "[unit][record]") {
  gather::test::serving_fixture f{one_route_config};
  std::atomic<std::int64_t> inflight{0};
  auto record = record_for(f, 0);
  record.hold(gather::inflight_slot::try_take(inflight, 10));
  CHECK(record.has_slot());
  CHECK(inflight.load() == 1);
  CHECK_FALSE(record.finished());

  record.finish(504, "coordinator missed the hard limit");
  CHECK(record.finished());
  CHECK(inflight.load() == 0);
  CHECK(f.requests_line("/p", 504) == R"(gather_requests_total{route="/p",code="504"} 1)");

  record.finish(499, "a second end is ignored");
  record.finish(200, f.serving->cfg.routes[0].sections, {gather::section_outcome{}});
  CHECK(f.requests_line("/p", 504) == R"(gather_requests_total{route="/p",code="504"} 1)");
  CHECK(f.requests_line("/p", 499).empty());
  CHECK(f.requests_line("/p", 200).empty());
  CHECK(inflight.load() == 0);
}

TEST_CASE("request_record: a request that matched no route is counted under no_route", "[unit][record]") {
  gather::test::serving_fixture f{one_route_config};
  auto record = record_for(f, 1);
  CHECK(record.route() == 1);
  record.finish(404);
  CHECK(f.requests_line("no_route", 404) == R"(gather_requests_total{route="no_route",code="404"} 1)");
}

TEST_CASE("request_record: dropped unfinished, it still gives its slot back", "[unit][record]") {
  gather::test::serving_fixture f{one_route_config};
  std::atomic<std::int64_t> inflight{0};
  {
    auto record = record_for(f, 0);
    record.hold(gather::inflight_slot::try_take(inflight, 10));
    auto moved = std::move(record);
    CHECK(inflight.load() == 1);
  }
  CHECK(inflight.load() == 0);
  CHECK(f.requests_line("/p", 200).empty());
}

TEST_CASE("request_record: an aggregate answer counts its sections too", "[unit][record]") {
  gather::test::serving_fixture f{one_route_config};
  auto record = record_for(f, 0);
  gather::section_outcome outcome;
  outcome.status = gather::section_status::error;
  record.finish(200, f.serving->cfg.routes[0].sections, {outcome});
  CHECK(f.requests_line("/p", 200) == R"(gather_requests_total{route="/p",code="200"} 1)");
  const auto text = f.serving->counters.exposition({});
  CHECK(text.find(R"(gather_section_total{route="/p",section="a",status="error")") != std::string::npos);
}
