// A real redis-server that stalls (CLIENT PAUSE) or is killed mid-run and comes back
// (docs/shared.md, "When Redis fails"): no request waits longer than timeout_ms for it, none
// fails, the store counts as down and then as up again.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// Requests to `gw` on one keep-alive connection until `stop`: the answers that were not 200 and
/// the slowest answer's time.
struct steady_load {
  explicit steady_load(int port)
      : thread([this, port] {
          httplib::Client client("127.0.0.1", port);
          client.set_keep_alive(true);
          while (!stop) {
            const auto began = std::chrono::steady_clock::now();
            const auto r = client.Get("/p");
            const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::steady_clock::now() - began).count();
            slowest_us = std::max<long long>(slowest_us, us);
            (r && r->status == 200 ? answered : failed)++;
          }
        }) {}
  ~steady_load() { finish(); }
  void finish() {
    stop = true;
    if (thread.joinable())
      thread.join();
  }
  std::atomic<bool> stop{false};
  std::atomic<long> answered{0}, failed{0};
  std::atomic<long long> slowest_us{0};
  std::thread thread;
};

json open_limit() {
  return {{"per", "ip"}, {"rate_per_s", 1000000}, {"burst", 1000000}, {"shared", true}};
}

} // namespace

TEST_CASE("shared store: CLIENT PAUSE mid-run delays no request past timeout_ms", "[shared][pause]") {
  shared_rig rig;
  const int sync_ms = GENERATE(0, 20);
  served_gateway gw(limited_gateway_config(rig.down, rig.store({{"timeout_ms", 50}, {"sync_ms", sync_ms}}), open_limit()));
  REQUIRE(gw.await_shared_up());
  steady_load load(gw.port);
  REQUIRE(eventually([&] { return load.answered > 10; }));
  rig.redis.cli({"CLIENT", "PAUSE", "1500", "ALL"});
  const bool went_down = eventually([&] { return gw.shared_up() == false; }, std::chrono::seconds(5));
  const bool came_back = eventually([&] { return gw.shared_up() == true; }, std::chrono::seconds(10));
  const long before = load.answered;
  REQUIRE(eventually([&] { return load.answered > before + 10; }));
  load.finish();
  INFO("sync_ms " << sync_ms << ": answered " << load.answered << ", slowest " << load.slowest_us << " us");
  CHECK(went_down);
  CHECK(came_back);
  CHECK(load.failed == 0);
  // timeout_ms plus the request's own work, with room for a loaded 2-core machine.
  CHECK(load.slowest_us < 50000 + 250000);
  const std::string op = sync_ms == 0 ? "limit" : "sync";
  CHECK(gw.metric(R"(gather_shared_ops_total{op=")" + op + R"(",result="timeout"})") >= 1);
}

TEST_CASE("shared store: killed mid-run, then back on its port", "[shared][kill]") {
  test_server down;
  serve_empty_object(down);
  down.start();
  auto redis = std::make_unique<redis_server>();
  const int port = redis->port();
  const int sync_ms = GENERATE(0, 20);
  served_gateway gw(limited_gateway_config(down, {{"redis", redis->url()}, {"timeout_ms", 50}, {"sync_ms", sync_ms}},
                                           open_limit()));
  REQUIRE(gw.await_shared_up());
  steady_load load(gw.port);
  REQUIRE(eventually([&] { return load.answered > 10; }));
  redis->kill();
  CHECK(eventually([&] { return gw.shared_up() == false; }, std::chrono::seconds(5)));
  CHECK(gw.process.wait_for_stderr("\"event\":\"shared_store_down\""));
  const long during = load.answered;
  REQUIRE(eventually([&] { return load.answered > during + 10; })); // served while it is gone
  redis = std::make_unique<redis_server>(std::vector<std::string>{}, port);
  CHECK(eventually([&] { return gw.shared_up() == true; }, std::chrono::seconds(10)));
  // Decisions reach the new server: the bucket is written there again.
  REQUIRE(eventually([&] { return !redis->cli({"KEYS", "gather:rl:/p:*"}).empty(); }));
  load.finish();
  INFO("sync_ms " << sync_ms << ": answered " << load.answered << ", slowest " << load.slowest_us << " us");
  CHECK(load.failed == 0);
  CHECK(load.slowest_us < 50000 + 250000);
}
