// The section cache end to end: real downstreams count their calls, the real gateway answers.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include <caf/all.hpp>

#include "gather/values/atoms.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/actors/section_cache.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

json cached(const std::string& url, int ttl_ms, json extra = json::object()) {
  json s = {{"name", "c"}, {"url", url}, {"timeout_ms", 1000}, {"fallback", "F"}, {"cache_ttl_ms", ttl_ms}};
  for (auto& [k, v] : extra.items())
    s[k] = v;
  return s;
}

json section_of(running_gateway& gw, const std::string& path, const httplib::Headers& headers = {}) {
  auto r = gw.get(path, headers);
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return json::parse(r->body);
}

} // namespace

TEST_CASE("a cached section: miss, then hits, then a new call after the TTL", "[cache]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get(R"(/v/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    res.set_content(json{{"id", req.matches[1].str()}, {"n", calls.load()}}.dump(), "application/json");
  });
  down.start();
  running_gateway gw{route_config_json("/p/{id}", {cached(down.base_url() + "/v/{id}", 300)}, 1000)};
  auto first = section_of(gw, "/p/1");
  CHECK(first["sections"]["c"]["source"] == "live");
  CHECK(first["sections"]["c"]["attempts"] == 1);
  auto second = section_of(gw, "/p/1");
  CHECK(second["sections"]["c"]["status"] == "ok");
  CHECK(second["sections"]["c"]["source"] == "cache");
  CHECK(second["sections"]["c"]["attempts"] == 0);
  CHECK(second["data"]["c"] == first["data"]["c"]);
  CHECK(calls == 1);
  CHECK(section_of(gw, "/p/2")["sections"]["c"]["source"] == "live"); // another URL, another key
  CHECK(calls == 2);
  // After the TTL the entry is not served any more.
  REQUIRE(eventually([&] { return section_of(gw, "/p/1")["sections"]["c"]["source"] == "live"; },
                     milliseconds{3000}));
  CHECK(calls == 3);
  auto metrics = gw.get("/metrics")->body;
  CHECK(metrics.find(R"(gather_cache_events_total{route="/p/{id}",section="c",event="miss"} 3)") != std::string::npos);
  CHECK(metrics.find(R"(gather_cache_events_total{route="/p/{id}",section="c",event="hit"} 0)") == std::string::npos);
}

TEST_CASE("single flight: 100 concurrent misses make one downstream call", "[cache]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    down.delay(milliseconds{300});
    res.set_content(R"({"v":1})", "application/json");
  });
  down.start();
  running_gateway gw{route_config_json("/p", {cached(down.base_url() + "/slow", 10000)}, 3000,
                                       {{"max_inflight", 200}})};
  gather::downstream_client load;
  std::atomic<int> answered{0}, ok_live{0}, attempts_one{0};
  for (int i = 0; i < 100; ++i)
    load.submit({"http://127.0.0.1:" + std::to_string(gw.port()) + "/p", {}, milliseconds{10000}},
                [&](gather::transfer_result&& r) {
                  auto body = json::parse(r.body, nullptr, false);
                  if (r.http_status == 200 && body["sections"]["c"]["status"] == "ok") {
                    ok_live += body["sections"]["c"]["source"] == "live" || body["sections"]["c"]["source"] == "cache";
                    attempts_one += body["sections"]["c"]["source"] == "live" && body["sections"]["c"]["attempts"] == 1;
                  }
                  ++answered;
                });
  REQUIRE(eventually([&] { return answered == 100; }, milliseconds{15000}));
  CHECK(calls == 1);
  CHECK(ok_live == 100);
  CHECK(attempts_one >= 1); // joiners report the shared call's attempts
  auto metrics = gw.get("/metrics")->body;
  CHECK(metrics.find(R"(event="miss"} 1)") != std::string::npos);
}

TEST_CASE("forwarded headers are part of the key: tenants never share entries", "[cache]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get("/t", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    res.set_content(json{{"tenant", req.get_header_value("X-Tenant")}}.dump(), "application/json");
  });
  down.start();
  running_gateway gw{route_config_json("/p", {cached(down.base_url() + "/t", 10000, {{"forward_headers", {"x-tenant"}}})}, 1000)};
  CHECK(section_of(gw, "/p", {{"X-Tenant", "a"}})["data"]["c"]["tenant"] == "a");
  CHECK(section_of(gw, "/p", {{"X-Tenant", "b"}})["data"]["c"]["tenant"] == "b");
  auto again = section_of(gw, "/p", {{"X-Tenant", "a"}});
  CHECK(again["data"]["c"]["tenant"] == "a");
  CHECK(again["sections"]["c"]["source"] == "cache");
  CHECK(calls == 2);
}

TEST_CASE("a failed call is not cached", "[cache]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get("/f", [&](const httplib::Request&, httplib::Response& res) {
    res.status = calls++ == 0 ? 500 : 200;
    res.set_content(R"({"v":1})", "application/json");
  });
  down.start();
  running_gateway gw{route_config_json("/p", {cached(down.base_url() + "/f", 10000)}, 1000)};
  auto failed = section_of(gw, "/p");
  CHECK(failed["sections"]["c"]["status"] == "error");
  CHECK(failed["data"]["c"] == "F");
  auto next = section_of(gw, "/p");
  CHECK(next["sections"]["c"]["status"] == "ok");
  CHECK(next["sections"]["c"]["source"] == "live");
  CHECK(calls == 2);
}

TEST_CASE("the cache is bounded: least recently used entries go first", "[cache]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get(R"(/v/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    res.set_content(json{{"id", req.matches[1].str()}}.dump(), "application/json");
  });
  down.start();
  // 4 entries in all: the cache has 4 shards of one entry each, so keys evict within their shard.
  running_gateway gw{route_config_json("/p/{id}", {cached(down.base_url() + "/v/{id}", 60000)}, 1000,
                                       {{"cache_max_entries", 4}})};
  for (int i = 0; i < 40; ++i)
    section_of(gw, "/p/k" + std::to_string(i));
  CHECK(calls == 40);
  int hits = 0;
  for (int i = 0; i < 40; ++i)
    hits += section_of(gw, "/p/k" + std::to_string(i))["sections"]["c"]["source"] == "cache";
  CHECK(hits <= 4); // never more entries than the bound
  CHECK(section_of(gw, "/p/k39")["sections"]["c"]["source"] == "cache"); // the newest survived
}

TEST_CASE("stale-if-error: a failed call shows the expired entry, keeping its own status", "[cache]") {
  std::atomic<bool> healthy{true};
  test_server down;
  down.get("/s", [&](const httplib::Request&, httplib::Response& res) {
    res.status = healthy ? 200 : 503;
    res.set_content(R"({"price":10})", "application/json");
  });
  down.start();
  running_gateway gw{route_config_json("/p", {cached(down.base_url() + "/s", 100, {{"stale_ttl_ms", 60000}})}, 1000)};
  CHECK(section_of(gw, "/p")["sections"]["c"]["source"] == "live");
  healthy = false;
  // Once the 100 ms TTL has passed, the failed live call falls back to the stale entry.
  REQUIRE(eventually([&] { return section_of(gw, "/p")["sections"]["c"]["source"] == "stale"; },
                     milliseconds{3000}));
  auto body = section_of(gw, "/p");
  CHECK(body["sections"]["c"]["status"] == "error");
  CHECK(body["sections"]["c"]["source"] == "stale");
  CHECK(body["data"]["c"] == json{{"price", 10}});
  CHECK(body["degraded"] == true);
  CHECK(body["warnings"] == json::array({"c_error"}));
}

TEST_CASE("cache keys are validated: stale_ttl_ms needs cache_ttl_ms", "[cache]") {
  json cfg = route_config_json("/p", {{{"name", "c"}, {"url", "http://127.0.0.1:1/x"}, {"timeout_ms", 10},
                                       {"fallback", 0}, {"stale_ttl_ms", 100}}}, 100);
  auto loaded = gather::load_config(cfg.dump());
  REQUIRE(!loaded.value);
  CHECK(loaded.problems.at(0).rfind("routes[0].sections[0].stale_ttl_ms", 0) == 0);
  cfg["cache_max_entries"] = 0;
  CHECK(gather::load_config(cfg.dump()).problems.size() == 2);
}

TEST_CASE("each cache shard reports its mailbox: waiting messages while busy, 0 once idle", "[cache]") {
  // Only messages sent to shard_for() count: the test sends through it as the workers do.
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  gather::section_cache cache{system, gather::cache_limits{}, 2};
  REQUIRE(cache.mailboxes().size() == 2);
  const std::string key = gather::cache_key(gather::cache_scope("/r", gather::section_config{}), "http://127.0.0.1/x", {});
  // A burst from one thread: enqueueing is far cheaper than handling a lookup, so lookups queue.
  caf::scoped_actor sender{system};
  for (int i = 0; i < 20000; ++i)
    sender->send(cache.shard_for(key), gather::lookup_atom::value, key + std::to_string(i % 100));
  std::size_t peak = 0;
  REQUIRE(eventually([&] {
    peak = 0;
    std::size_t depth = 0;
    for (const auto& m : cache.mailboxes()) {
      peak = std::max(peak, m->peak.load());
      depth += m->depth();
    }
    return depth == 0 && peak > 0;
  }, milliseconds{10000}));
  INFO("peak " << peak);
  CHECK(peak > 0);
  // All 20,000 may be queued before the shard runs once (a loaded machine): never more.
  CHECK(peak <= 20000);
}
