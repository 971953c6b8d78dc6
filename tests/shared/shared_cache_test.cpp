// The shared section cache (`cache_shared`, docs/shared.md) across real `gather serve` processes
// and a real redis-server: one downstream call per key across the gateways, an entry read from
// the store is `source: cache`, stale-if-error from the store, and a value in the store that is
// not an entry is a miss that is replaced.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

/// A gateway with one route /c whose one required section "s" on `down` is cached (and shared).
json cached_gateway_config(const shared_rig& rig, json section_extra) {
  json section = {{"name", "s"}, {"url", rig.down.base_url() + "/s"}, {"timeout_ms", 1000},
                  {"required", true}, {"cache_ttl_ms", 2000}, {"cache_shared", true}};
  for (auto& [key, value] : section_extra.items())
    section[key] = value;
  return {{"listen", "127.0.0.1:0"},
          {"shared", rig.store({{"timeout_ms", 200}})},
          {"routes", {{{"path", "/c"}, {"deadline_ms", 3000}, {"sections", {section}}}}}};
}

/// GET /c on `gw`: the status and the section's data and source.
struct cache_read {
  int status = -1;
  json data;
  std::string source;
};
cache_read read_c(served_gateway& gw) {
  httplib::Client client("127.0.0.1", gw.port);
  const auto r = client.Get("/c");
  cache_read out;
  if (!r)
    return out;
  out.status = r->status;
  const auto body = json::parse(r->body, nullptr, false);
  if (body.is_object() && body.contains("data") && body["data"].contains("s")) {
    out.data = body["data"]["s"];
    out.source = body["sections"]["s"].value("source", "");
  }
  return out;
}

/// An entry's key (its lock's key is the same with ":lock").
const std::string entry_pattern = "gather:cache:" + std::string(32, '?');

long cache_event(served_gateway& gw, const char* event) {
  return gw.metric(std::string(R"(gather_cache_events_total{route="/c",section="s",event=")") + event + "\"}");
}

/// A downstream whose /s answers {"n": how many calls it has had}.
std::function<void(test_server&)> counting_s(std::atomic<int>& calls) {
  return [&calls](test_server& down) {
    down.get("/s", [&calls](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"n", ++calls}}); });
  };
}

} // namespace

TEST_CASE("shared cache: three gateways call the downstream once per key", "[shared][cache]") {
  std::atomic<int> calls{0};
  shared_rig rig([&](test_server& down) {
    down.get("/s", [&](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300)); // long enough for all to miss at once
      answer_json(res, {{"n", ++calls}});
    });
  });
  // A life long enough for a fourth gateway to start (slowly, under a sanitizer) and find it.
  const json cfg = cached_gateway_config(rig, {{"cache_ttl_ms", 30000}});
  std::vector<std::unique_ptr<served_gateway>> gateways;
  for (int i = 0; i < 3; ++i)
    gateways.push_back(std::make_unique<served_gateway>(cfg));
  for (auto& gw : gateways)
    REQUIRE(gw->await_shared_up());

  // All three miss at once: one takes the lock and calls, the other two wait for its entry.
  std::vector<cache_read> reads(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&, i] { reads[i] = read_c(*gateways[i]); });
  for (auto& t : clients)
    t.join();
  CHECK(calls == 1);
  for (const auto& r : reads) {
    CHECK(r.status == 200);
    CHECK(r.data == json{{"n", 1}});
  }
  long waits = 0, shared_hits = 0;
  for (auto& gw : gateways) {
    waits += std::max(0L, cache_event(*gw, "shared_wait"));
    shared_hits += std::max(0L, cache_event(*gw, "shared_hit"));
  }
  CHECK(waits == 2);
  CHECK(shared_hits == 2);
  // A fourth gateway, started later, finds the entry in the store: source cache, no call.
  served_gateway late(cfg);
  REQUIRE(late.await_shared_up());
  const auto r = read_c(late);
  CHECK(r.status == 200);
  CHECK(r.data == json{{"n", 1}});
  CHECK(r.source == "cache");
  CHECK(calls == 1);
  CHECK(cache_event(late, "shared_hit") == 1);
  // Stored under the key's hash, with the store's TTL of its life.
  const std::string key = rig.redis.cli({"KEYS", entry_pattern});
  REQUIRE(!key.empty());
  const long ttl = std::stol(rig.redis.cli({"PTTL", key}));
  CHECK(ttl > 0);
  CHECK(ttl <= 30000);
}

TEST_CASE("shared cache: a value in the store that is not an entry is a miss and is replaced", "[shared][cache]") {
  std::atomic<int> calls{0};
  shared_rig rig(counting_s(calls));
  const json cfg = cached_gateway_config(rig, json::object());
  {
    served_gateway first(cfg);
    REQUIRE(first.await_shared_up());
    CHECK(read_c(first).data == json{{"n", 1}});
    REQUIRE(eventually([&] { return !rig.redis.cli({"KEYS", entry_pattern}).empty(); }));
  }
  const std::string key = rig.redis.cli({"KEYS", entry_pattern});
  int expected_calls = 1;
  for (const std::vector<std::string>& garbage :
       {std::vector<std::string>{"SET", key, "gather-cache-1\n{not json"},
        std::vector<std::string>{"SET", key, "{\"n\": 99}"},
        std::vector<std::string>{"RPUSH", key, "x"}}) {
    rig.redis.cli({"DEL", key});
    rig.redis.cli(garbage);
    rig.redis.cli({"PEXPIRE", key, "60000"});
    served_gateway fresh(cfg); // its own cache is empty: it asks the store
    REQUIRE(fresh.await_shared_up());
    const auto r = read_c(fresh);
    ++expected_calls;
    CHECK(r.status == 200);
    CHECK(r.data == json{{"n", expected_calls}});
    CHECK(r.source == "live");
    CHECK(calls == expected_calls);
    // Replaced by the call's entry.
    REQUIRE(eventually([&] { return rig.redis.cli({"TYPE", key}) == "string"; }));
    const std::string stored = rig.redis.cli({"GET", key});
    INFO("key " << key << " holds " << stored);
    CHECK(stored.find("\"n\":" + std::to_string(expected_calls)) != std::string::npos);
  }
}

TEST_CASE("shared cache: a failed call shows the store's stale entry", "[shared][cache]") {
  std::atomic<bool> failing{false};
  shared_rig rig([&](test_server& down) {
    down.get("/s", [&](const httplib::Request&, httplib::Response& res) {
      if (failing) {
        res.status = 500;
        return;
      }
      answer_json(res, {{"fresh", true}});
    });
  });
  // Optional: a required section that fails fails the request, stale data or not.
  const json cfg = cached_gateway_config(rig, {{"cache_ttl_ms", 200}, {"stale_ttl_ms", 60000},
                                               {"required", false}, {"fallback", {{"fresh", false}}}});
  {
    served_gateway first(cfg);
    REQUIRE(first.await_shared_up());
    CHECK(read_c(first).source == "live");
    // The entry goes to the store after the answer (nothing waits for it): kill only once it is there.
    REQUIRE(eventually([&] { return !rig.redis.cli({"KEYS", entry_pattern}).empty(); }));
  }
  failing = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the entry's life passes (its TTL is what is tested)
  served_gateway second(cfg); // never saw the entry: only the store has it
  REQUIRE(second.await_shared_up());
  const auto r = read_c(second);
  CHECK(r.status == 200);
  CHECK(r.source == "stale");
  CHECK(r.data == json{{"fresh", true}});
}

TEST_CASE("shared cache: a store that is down leaves each gateway its own cache", "[shared][cache]") {
  std::atomic<int> calls{0};
  shared_rig rig(counting_s(calls));
  const json cfg = cached_gateway_config(rig, json::object());
  served_gateway gw(cfg);
  REQUIRE(gw.await_shared_up());
  rig.redis.kill();
  REQUIRE(eventually([&] { return gw.shared_up() == false; }));
  CHECK(read_c(gw).source == "live");
  CHECK(read_c(gw).source == "cache");
  CHECK(calls == 1);
}

TEST_CASE("shared cache: a lock holder whose call fails lets go, and a waiter calls at once", "[shared][cache]") {
  std::atomic<int> calls{0};
  shared_rig rig([&](test_server& down) {
    down.get("/s", [&](const httplib::Request&, httplib::Response& res) {
      if (++calls == 1) { // the lock holder's call: slow, then failed
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        res.status = 500;
        return;
      }
      answer_json(res, {{"n", calls.load()}});
    });
  });
  // The lock lives 2 s (the section's timeout): a waiter that waited for it to expire would
  // answer after 2 s, one that took the released lock about 300 ms after the holder began.
  const json cfg = cached_gateway_config(rig, {{"timeout_ms", 2000}, {"required", false},
                                               {"fallback", {{"n", 0}}}});
  served_gateway holder(cfg), waiter(cfg);
  REQUIRE(eventually([&] { return holder.shared_up() == true && waiter.shared_up() == true; }));
  cache_read first;
  std::thread lead([&] { first = read_c(holder); });
  REQUIRE(eventually([&] { return calls.load() == 1; })); // the holder has the lock and calls
  const auto started = std::chrono::steady_clock::now();
  const auto second = read_c(waiter);
  const auto waited = std::chrono::steady_clock::now() - started;
  lead.join();
  CHECK(first.source == "fallback");
  CHECK(second.status == 200);
  CHECK(second.source == "live");
  CHECK(second.data == json{{"n", 2}});
  CHECK(calls == 2);
  CHECK(cache_event(waiter, "shared_wait") == 1);
  CHECK(waited < std::chrono::milliseconds(1500));
  // Both locks let go of (the holder's after its failure, the waiter's after its entry).
  REQUIRE(eventually([&] { return rig.redis.cli({"KEYS", entry_pattern + ":lock"}).empty(); }));
  CHECK(!rig.redis.cli({"KEYS", entry_pattern}).empty());
}

TEST_CASE("shared cache: a waiter calls itself when a call of its own would no longer fit", "[shared][cache]") {
  std::atomic<int> calls{0};
  shared_rig rig(counting_s(calls));
  // deadline 1500, timeout 500, store timeout 200: it waits about 1500 - 500 - 200 - 10 ms.
  json cfg = cached_gateway_config(rig, {{"timeout_ms", 500}});
  cfg["routes"][0]["deadline_ms"] = 1500;
  std::string key;
  {
    served_gateway first(cfg); // learns the entry's key
    REQUIRE(first.await_shared_up());
    CHECK(read_c(first).data == json{{"n", 1}});
    REQUIRE(eventually([&] { return !rig.redis.cli({"KEYS", entry_pattern}).empty(); }));
    key = rig.redis.cli({"KEYS", entry_pattern});
  }
  // Another gateway holds the lock for a minute and never writes an entry.
  rig.redis.cli({"DEL", key});
  rig.redis.cli({"SET", key + ":lock", "someone-else", "PX", "60000"});
  served_gateway gw(cfg);
  REQUIRE(gw.await_shared_up());
  const auto started = std::chrono::steady_clock::now();
  const auto r = read_c(gw);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(r.status == 200);
  CHECK(r.source == "live");
  CHECK(r.data == json{{"n", 2}});
  CHECK(cache_event(gw, "shared_wait") == 1);
  CHECK(took >= std::chrono::milliseconds(600)); // it waited for the entry first
  CHECK(took < std::chrono::milliseconds(1500)); // and its own call fit before the deadline
  // Its own call's entry is stored; the other gateway's lock is left alone.
  REQUIRE(eventually([&] { return rig.redis.cli({"TYPE", key}) == "string"; }));
  CHECK(rig.redis.cli({"GET", key + ":lock"}) == "someone-else");
}
