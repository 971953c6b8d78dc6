// Shared rate limits across real `gather serve` processes and a real redis-server
// (docs/shared.md): one limit for every gateway, client keys hashed in the store, and a store
// that is down at start, stopped mid-run or refuses the password never stops the serving.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

TEST_CASE("shared limit: three gateways admit one limit within the approximate bound", "[shared][accuracy]") {
  shared_rig rig;
  const int rate = 20, burst = 20;
  const double sync_s = 0.05;
  // Every gateway sees the store and the other two before the load starts.
  auto gateways = gateways_seeing_each_other(
      limited_gateway_config(rig.down, rig.store({{"sync_ms", 50}}), route_limit(rate, burst)), 3);
  const auto load = load_every_gateway(gateways, std::chrono::seconds(3));
  const double limit = rate * load.seconds + burst;
  const double bound = 2 * (rate * sync_s + burst); // (G - 1) x (rate x sync + burst)
  INFO(load.said() << "; limit " << limit);
  CHECK(load.other == 0);
  CHECK(load.refused > load.admitted); // the load was well over the limit
  CHECK(load.admitted <= limit + bound);
  CHECK(load.admitted >= 0.9 * rate * load.seconds);
  // Per-process limits would have admitted about three times the limit.
  CHECK(load.admitted < 2 * limit);
}

TEST_CASE("shared limit: a tenant's bucket is one across gateways and stored under a hash", "[shared][tenant]") {
  shared_rig rig;
  const json cfg = limited_gateway_config(rig.down, rig.store({{"sync_ms", 20}, {"prefix", "shop:"}}),
                                          {{"per", "header:x-tenant"}, {"rate_per_s", 0.1}, {"burst", 3}, {"shared", true}});
  served_gateway one(cfg), two(cfg);
  REQUIRE(eventually([&] { return one.shared_up() == true && two.shared_up() == true; }));
  const httplib::Headers tenant_a{{"X-Tenant", "tenant-a"}}, tenant_b{{"X-Tenant", "tenant-b"}};
  for (int i = 0; i < 3; ++i)
    CHECK(one.status(tenant_a) == 200);
  CHECK(one.status(tenant_a) == 429);
  // The store holds the bucket under the route and the key's hash, never the key as sent.
  REQUIRE(eventually([&] { return rig.redis.cli({"KEYS", "shop:rl:*"}).find("shop:rl:/p:") != std::string::npos; }));
  CHECK(rig.redis.cli({"KEYS", "*tenant*"}).empty());
  // The second gateway learns tenant-a's bucket at its first sync after using it (a key it has
  // not seen is a full bucket there: the approximate mode's bound). Asked no faster than its
  // syncs, it admits at most the first request, where a bucket of its own would admit 3.
  int admitted_on_two = 0;
  for (int i = 0; i < 3; ++i) {
    admitted_on_two += two.status(tenant_a) == 200;
    std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the pace of the client, 5 syncs
  }
  CHECK(admitted_on_two <= 1);
  CHECK(two.status(tenant_a) == 429);
  CHECK(two.status(tenant_b) == 200);
  CHECK(one.process.wait_for_stderr("\"event\":\"shared_store_up\""));
}

TEST_CASE("shared limit: a store down at start then up serves from a local bucket meanwhile", "[shared][start]") {
  test_server down;
  serve_empty_object(down);
  down.start();
  const int port = unused_port();
  served_gateway gw(limited_gateway_config(
      down, {{"redis", "redis://127.0.0.1:" + std::to_string(port)}, {"timeout_ms", 20}},
      {{"per", "route"}, {"rate_per_s", 0.1}, {"burst", 2}, {"shared", true}}));
  CHECK(gw.shared_up() == false);
  // G is 1 before any gateway was seen: the local bucket is the whole limit.
  CHECK(gw.status() == 200);
  CHECK(gw.status() == 200);
  CHECK(gw.status() == 429);
  CHECK(gw.process.wait_for_stderr("\"event\":\"shared_store_down\""));
  redis_server redis({}, port);
  REQUIRE(gw.await_shared_up(std::chrono::seconds(10)));
  CHECK(gw.process.wait_for_stderr("\"event\":\"shared_store_up\""));
}

TEST_CASE("shared limit: a store stopped mid-run delays nothing and comes back", "[shared][sigstop]") {
  shared_rig rig;
  served_gateway gw(limited_gateway_config(rig.down, rig.store({{"timeout_ms", 20}, {"sync_ms", 20}}),
                                           {{"per", "ip"}, {"rate_per_s", 1000000}, {"burst", 1000000}, {"shared", true}}));
  REQUIRE(gw.await_shared_up());
  std::atomic<bool> stop{false};
  std::atomic<long> answered{0}, failed{0};
  std::atomic<long long> slowest_us{0};
  std::thread load([&] {
    httplib::Client client("127.0.0.1", gw.port);
    client.set_keep_alive(true);
    while (!stop) {
      const auto began = std::chrono::steady_clock::now();
      const auto r = client.Get("/p");
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began).count();
      slowest_us = std::max<long long>(slowest_us, us);
      (r && r->status == 200 ? answered : failed)++;
    }
  });
  rig.redis.signal(SIGSTOP);
  // Five failed syncs in a row: the store counts as down.
  const bool went_down = eventually([&] { return gw.shared_up() == false; }, std::chrono::seconds(5));
  rig.redis.signal(SIGCONT);
  const bool came_back = eventually([&] { return gw.shared_up() == true; }, std::chrono::seconds(10));
  stop = true;
  load.join();
  CHECK(went_down);
  CHECK(came_back);
  CHECK(failed == 0);
  CHECK(answered > 0);
  // A decision never waits for the store: far below a second even on a loaded machine.
  CHECK(slowest_us < 500000);
  CHECK(gw.metric(R"(gather_shared_ops_total{op="sync",result="timeout"})") >= 1);
  CHECK(gw.process.wait_for_stderr("\"event\":\"shared_store_down\""));
  CHECK(gw.process.wait_for_stderr("5 failures in a row"));
}

TEST_CASE("shared limit: a wrong password is a store that is down and is never logged", "[shared][password]") {
  test_server down;
  serve_empty_object(down);
  down.start();
  redis_server redis({"--requirepass", "the-right-one-7"});
  const json limit = {{"per", "route"}, {"rate_per_s", 10}, {"shared", true}};
  served_gateway wrong(limited_gateway_config(
      down, {{"redis", redis.url()}, {"password_file", temp_file("not-the-password-42\n", ".pass")}}, limit));
  CHECK(wrong.process.wait_for_stderr("AUTH refused"));
  CHECK(wrong.shared_up() == false);
  CHECK(wrong.status() == 200);
  served_gateway right(limited_gateway_config(
      down, {{"redis", redis.url()}, {"password_file", temp_file("the-right-one-7\n", ".pass")}}, limit));
  CHECK(eventually([&] { return right.shared_up() == true; }));
  wrong.process.signal(SIGTERM);
  REQUIRE(wrong.process.wait_exit());
  CHECK(wrong.process.err().find("not-the-password-42") == std::string::npos);
}

TEST_CASE("shared: gather serve refuses to start on an unreadable password file", "[shared][system]") {
  const json cfg = {{"listen", "127.0.0.1:0"},
                    {"shared", {{"redis", "redis://127.0.0.1:1"}, {"password_file", "/nonexistent/redis.pass"}}},
                    {"routes", {{{"path", "/p"}, {"sections", {{{"name", "a"}, {"url", "http://127.0.0.1:1/a"},
                                                               {"timeout_ms", 100}, {"required", true}}}}}}}};
  const auto result = run(binary, {"serve", "--config", temp_file(cfg.dump())});
  CHECK(result.code != 0);
  CHECK(result.err.find("shared.password_file: cannot read /nonexistent/redis.pass") != std::string::npos);
}
