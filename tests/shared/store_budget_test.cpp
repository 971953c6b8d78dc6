// One request, one store budget (docs/shared.md, "When the store fails"): a real redis-server
// stopped (SIGSTOP, and CLIENT PAUSE) under three gateways that serve a route with an exact
// shared limit and a shared cache, every request a fresh key: no request waits longer than
// timeout_ms for the store, its limit's decision and its section's look together. And a store
// that is down from the start: every operation not made is counted, from the first request.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include "support/ports.hpp"
#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// /p/{id}: one section on `down`'s /a, cached in the store too, under a shared limit that
/// admits everything.
json limited_cached_config(const test_server& down, json shared) {
  json route = {{"path", "/p/{id}"},
                {"rate_limit", {{"per", "ip"}, {"rate_per_s", 1000000}, {"burst", 1000000}, {"shared", true}}},
                {"sections", {{{"name", "a"}, {"url", down.base_url() + "/a?k={id}"}, {"timeout_ms", 2000},
                               {"required", true}, {"cache_ttl_ms", 60000}, {"cache_shared", true}}}}};
  return {{"listen", "127.0.0.1:0"}, {"shared", std::move(shared)}, {"routes", {route}}};
}

/// Requests with fresh keys to each gateway (a client thread each) for `run_for`: the answers
/// that were not 200 and the slowest answer's time, by the client's clock.
struct fresh_keys_load {
  long answered = 0, failed = 0;
  long long slowest_us = 0;
};
fresh_keys_load load_fresh_keys(std::vector<std::unique_ptr<served_gateway>>& gateways,
                                std::chrono::milliseconds run_for, const std::string& tag) {
  std::atomic<long> answered{0}, failed{0};
  std::atomic<long long> slowest{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (std::size_t g = 0; g < gateways.size(); ++g)
    clients.emplace_back([&, g, port = gateways[g]->port] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_read_timeout(5, 0);
      for (int i = 0; std::chrono::steady_clock::now() - start < run_for; ++i) {
        const auto began = std::chrono::steady_clock::now();
        const auto r = client.Get(("/p/" + tag + "-" + std::to_string(g) + "-" + std::to_string(i)).c_str());
        const long long us = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - began).count();
        for (auto seen = slowest.load(); us > seen && !slowest.compare_exchange_weak(seen, us);) {
        }
        (r && r->status == 200 ? answered : failed)++;
      }
    });
  for (auto& t : clients)
    t.join();
  return {answered, failed, slowest};
}

} // namespace

TEST_CASE("shared store: a hung store delays a request by timeout_ms at most, all its operations together",
          "[shared][budget]") {
  const bool by_signal = GENERATE(true, false);
  shared_rig rig;
  constexpr int timeout_ms = 400;
  auto gateways = gateways_seeing_each_other(
      limited_cached_config(rig.down, rig.store({{"timeout_ms", timeout_ms}, {"sync_ms", 0}})), 3);
  // A healthy store first: the limit and the cache both go through it.
  const auto warm = load_fresh_keys(gateways, std::chrono::milliseconds(300), "warm");
  REQUIRE(warm.failed == 0);
  if (by_signal)
    rig.redis.signal(SIGSTOP);
  else
    rig.redis.cli({"CLIENT", "PAUSE", "4000", "ALL"});
  const auto hung = load_fresh_keys(gateways, std::chrono::milliseconds(2500), "hung");
  if (by_signal)
    rig.redis.signal(SIGCONT);
  INFO((by_signal ? "SIGSTOP" : "CLIENT PAUSE") << ": answered " << hung.answered << ", failed " << hung.failed
                                                << ", slowest " << hung.slowest_us << " us");
  CHECK(hung.failed == 0);
  CHECK(hung.answered >= 3);
  // One timeout_ms for the store, plus the request's own work with room for a loaded machine;
  // a limit's decision and a look that each waited their own would take twice timeout_ms.
  CHECK(hung.slowest_us < (timeout_ms + 300) * 1000LL);
  for (auto& gw : gateways) {
    CHECK(gw->metric(R"(gather_shared_ops_total{op="limit",result="timeout"})") >= 1);
    // The look a spent budget (or the open breaker) did not make is counted.
    CHECK(gw->metric(R"(gather_shared_ops_total{op="get",result="skipped"})") >= 1);
  }
  for (auto& gw : gateways)
    CHECK(eventually([&] { return gw->shared_up() == true; }, std::chrono::seconds(10)));
}

TEST_CASE("shared store: down from the start, every operation not made is counted from the first request",
          "[shared][budget]") {
  const int sync_ms = GENERATE(0, 20);
  test_server down;
  serve_empty_object(down);
  down.start();
  const auto cfg = limited_cached_config(
      down, {{"redis", "redis://127.0.0.1:" + std::to_string(unused_port())}, {"timeout_ms", 50}, {"sync_ms", sync_ms}});
  std::vector<std::unique_ptr<served_gateway>> gateways;
  for (int i = 0; i < 2; ++i)
    gateways.push_back(std::make_unique<served_gateway>(cfg));
  const auto load = load_fresh_keys(gateways, std::chrono::milliseconds(300), "down");
  INFO("sync_ms " << sync_ms << ": answered " << load.answered);
  CHECK(load.failed == 0);
  REQUIRE(load.answered >= 2);
  for (auto& gw : gateways) {
    CHECK(gw->shared_up() == false);
    CHECK(gw->metric(R"(gather_shared_ops_total{op="get",result="skipped"})") >= 1);
    if (sync_ms == 0)
      CHECK(gw->metric(R"(gather_shared_ops_total{op="limit",result="skipped"})") >= 1);
    else // the counts a sync would have sent, every sync_ms while there were any
      CHECK(eventually([&] { return gw->metric(R"(gather_shared_ops_total{op="sync",result="skipped"})") >= 1; }));
    CHECK(gw->metric(R"(gather_shared_ops_total{op="get",result="ok"})") == 0);
  }
}
