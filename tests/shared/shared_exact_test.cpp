// The exact mode of a shared rate limit (sync_ms 0, docs/shared.md) across real `gather serve`
// processes and a real redis-server: one atomic decision in the store per request, a client
// over its limit refused without a store round trip, and a stopped store that delays a request
// by at most timeout_ms.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <vector>

#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// The store decisions a gateway asked for, whatever their result.
long exact_limit_ops(served_gateway& gw) {
  long total = 0;
  for (const char* result : {"ok", "error", "timeout", "skipped"})
    total += std::max(0L, gw.metric(std::string(R"(gather_shared_ops_total{op="limit",result=")") + result + "\"}"));
  return total;
}

/// The exact mode's `shared` section on `rig`'s store.
json exact_store(const shared_rig& rig) {
  return rig.store({{"sync_ms", 0}, {"timeout_ms", 200}});
}

} // namespace

TEST_CASE("exact shared limit: three gateways admit the limit, not one more", "[shared][exact][accuracy]") {
  shared_rig rig;
  const int rate = 20, burst = 20;
  auto gateways =
      gateways_seeing_each_other(limited_gateway_config(rig.down, exact_store(rig), route_limit(rate, burst)), 3);
  const auto load = load_every_gateway(gateways, std::chrono::seconds(3));
  const double limit = rate * load.seconds + burst;
  INFO(load.said() << "; limit " << limit);
  CHECK(load.other == 0);
  CHECK(load.missing_retry_after == 0);
  CHECK(load.refused > load.admitted); // the load was well over the limit
  // Every admission was one decision in the store, on its clock: rate x t + burst at most (the
  // client's t is a little longer than the store's, never shorter).
  CHECK(load.admitted <= limit + 1);
  CHECK(load.admitted >= 0.9 * rate * load.seconds + burst);
  // Most refusals cost no store round trip: the bucket's next token was known locally.
  long asked = 0;
  for (auto& gw : gateways)
    asked += exact_limit_ops(*gw);
  CHECK(asked < (load.admitted + load.refused) / 2);
  CHECK(asked >= load.admitted);
}

TEST_CASE("exact shared limit: a client over its limit is refused without asking the store again",
          "[shared][exact]") {
  shared_rig rig;
  const json cfg = limited_gateway_config(rig.down, exact_store(rig),
                                          {{"per", "header:x-tenant"}, {"rate_per_s", 0.1}, {"burst", 2}, {"shared", true}});
  served_gateway one(cfg), two(cfg);
  REQUIRE(eventually([&] { return one.shared_up() == true && two.shared_up() == true; }));
  const httplib::Headers tenant{{"X-Tenant", "t-1"}};
  CHECK(one.status(tenant) == 200);
  CHECK(one.status(tenant) == 200);
  const auto refused = one.client->Get("/p", tenant);
  REQUIRE(refused);
  CHECK(refused->status == 429);
  const int retry_after = std::atoi(refused->get_header_value("Retry-After").c_str());
  CHECK(retry_after >= 1);
  CHECK(retry_after <= 10);
  // The store answered the second request with the bucket's state: the third was refused
  // without asking it, and so is every one until the next token is due.
  CHECK(exact_limit_ops(one) == 2);
  for (int i = 0; i < 10; ++i)
    CHECK(one.status(tenant) == 429);
  CHECK(exact_limit_ops(one) == 2);
  // Another gateway learns it from the store once (here for a progressive answer: refused
  // before anything of it leaves), then refuses locally too.
  const auto streamed = two.client->Get("/p", {{"X-Tenant", "t-1"}, {"Accept", "application/x-ndjson"}});
  REQUIRE(streamed);
  CHECK(streamed->status == 429);
  CHECK(!streamed->get_header_value("Retry-After").empty());
  CHECK(two.status(tenant) == 429);
  CHECK(exact_limit_ops(two) == 1);
  // Another key is another bucket.
  CHECK(two.status({{"X-Tenant", "t-2"}}) == 200);
  CHECK(two.metric(R"(gather_shared_ops_total{op="limit",result="ok"})") == 2);
  // Stored under the key's hash, its value the bucket's theoretical arrival time.
  CHECK(rig.redis.cli({"KEYS", "*t-1*"}).empty());
  CHECK(!rig.redis.cli({"KEYS", "gather:rl:/p:*"}).empty());
}

TEST_CASE("exact shared limit: garbage in the store is a full bucket and is replaced", "[shared][exact]") {
  shared_rig rig;
  served_gateway gw(limited_gateway_config(rig.down, exact_store(rig),
                                           {{"per", "route"}, {"rate_per_s", 0.1}, {"burst", 1}, {"shared", true}}));
  REQUIRE(gw.await_shared_up());
  CHECK(gw.status() == 200);
  const std::string key = rig.redis.cli({"KEYS", "gather:rl:/p:*"});
  REQUIRE(!key.empty());
  CHECK(gw.status() == 429);
  // A bucket someone overwrote with another type, then with a number far in the future: each
  // reads as a full bucket (one request), and is written back as a bucket.
  for (const std::vector<std::string>& garbage : {std::vector<std::string>{"RPUSH", key, "x", "y"},
                                                  std::vector<std::string>{"SET", key, "not a number"},
                                                  std::vector<std::string>{"SET", key, "99999999999999999999"}}) {
    rig.redis.cli({"DEL", key});
    rig.redis.cli(garbage);
    // A gateway that has not seen the key asks the store (the first one would refuse locally).
    served_gateway fresh(limited_gateway_config(rig.down, exact_store(rig),
                                                {{"per", "route"}, {"rate_per_s", 0.1}, {"burst", 1}, {"shared", true}}));
    REQUIRE(fresh.await_shared_up());
    CHECK(fresh.status() == 200);
    CHECK(fresh.status() == 429);
    CHECK(rig.redis.cli({"TYPE", key}) == "string");
    CHECK(fresh.metric(R"(gather_shared_ops_total{op="limit",result="error"})") == 0);
  }
}

TEST_CASE("exact shared limit: a stopped store delays a request by at most timeout_ms", "[shared][exact][sigstop]") {
  shared_rig rig;
  served_gateway gw(limited_gateway_config(rig.down, rig.store({{"timeout_ms", 50}, {"sync_ms", 0}}),
                                           {{"per", "ip"}, {"rate_per_s", 1000000}, {"burst", 1000000}, {"shared", true}}));
  REQUIRE(gw.await_shared_up());
  CHECK(gw.status() == 200);
  rig.redis.signal(SIGSTOP);
  long answered = 0, failed = 0;
  long long slowest_us = 0;
  // Five timeouts in a row open the breaker; then nothing waits for the store at all.
  for (int i = 0; i < 20; ++i) {
    const auto began = std::chrono::steady_clock::now();
    const int status = gw.status();
    slowest_us = std::max<long long>(slowest_us, std::chrono::duration_cast<std::chrono::microseconds>(
                                                     std::chrono::steady_clock::now() - began).count());
    (status == 200 ? answered : failed)++;
  }
  CHECK(gw.shared_up() == false);
  rig.redis.signal(SIGCONT);
  CHECK(failed == 0);
  CHECK(answered == 20);
  // timeout_ms plus the request's own work, with room for a loaded 2-core machine.
  CHECK(slowest_us < 50000 + 250000);
  CHECK(gw.metric(R"(gather_shared_ops_total{op="limit",result="timeout"})") >= 5);
  CHECK(gw.metric(R"(gather_shared_ops_total{op="limit",result="timeout"})") < 20);
  REQUIRE(gw.await_shared_up(std::chrono::seconds(10)));
  CHECK(gw.status() == 200);
}

TEST_CASE("exact shared limit: a batch route waits for the store's decision too", "[shared][exact]") {
  std::atomic<int> calls{0};
  shared_rig rig([&](test_server& down) {
    down.get(R"(/b/(\w+))", [&](const httplib::Request&, httplib::Response& res) {
      ++calls;
      answer_json(res, json::object());
    });
  });
  const json limit = {{"per", "route"}, {"rate_per_s", 0.1}, {"burst", 1}, {"shared", true}};
  const json cfg = {{"listen", "127.0.0.1:0"},
                    {"shared", exact_store(rig)},
                    {"routes", {{{"path", "/b"}, {"rate_limit", limit},
                                 {"batch", {{"url", rig.down.base_url() + "/b/{item}"}, {"timeout_ms", 2000}}}}}}};
  served_gateway one(cfg), two(cfg);
  REQUIRE(eventually([&] { return one.shared_up() == true && two.shared_up() == true; }));
  const std::string body = R"({"items": ["x", "y"]})";
  const auto first = one.client->Post("/b", body, "application/json");
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(calls == 2);
  // The other gateway has not seen the bucket: it asks the store, which refuses; no call is made.
  const auto second = two.client->Post("/b", body, "application/json");
  REQUIRE(second);
  CHECK(second->status == 429);
  CHECK(!second->get_header_value("Retry-After").empty());
  CHECK(calls == 2);
  CHECK(two.metric(R"(gather_shared_ops_total{op="limit",result="ok"})") == 1);
  CHECK(two.metric(R"(gather_rate_limited_total{route="/b"})") == 1);
}
