// Batch routes end to end (docs/api.md#batch-routes-post): real downstreams on 127.0.0.1, the real gateway, real HTTP.
// Timing assertions keep margins a loaded 2-core machine keeps.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "support/test_helpers.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {


/// A batch object for `url` with a generous deadline; `extra` adds or overrides keys.
json batch(const std::string& url, json extra = json::object()) {
  json b = {{"url", url}, {"timeout_ms", 2000}, {"deadline_ms", 5000}};
  for (auto& [k, v] : extra.items())
    b[k] = v;
  return b;
}

json items_body(json items) { return json{{"items", std::move(items)}}; }


/// Calls per downstream path, for handlers running on the test server's threads.
class call_log {
public:
  void add(const std::string& key) {
    std::lock_guard<std::mutex> lock{mutex_};
    ++counts_[key];
  }
  int count(const std::string& key) {
    std::lock_guard<std::mutex> lock{mutex_};
    return counts_[key];
  }

private:
  std::mutex mutex_;
  std::map<std::string, int> counts_;
};

} // namespace

TEST_CASE("a batch answers every item in item order, and numbers stay numbers", "[batch]") {
  test_server down;
  std::mutex seen_mutex;
  std::set<std::string> request_ids, tenants;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    const auto id = req.matches[1].str();
    {
      std::lock_guard<std::mutex> lock{seen_mutex};
      request_ids.insert(req.get_header_value("X-Request-Id"));
      tenants.insert(req.get_header_value("X-Tenant"));
    }
    if (id == "first")
      down.delay(milliseconds{200}); // ends last: the rows must still come in item order
    answer_json(res, {{"id", id}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
    "/orders/status", batch(down.base_url() + "/o/{item}", {{"forward_headers", {"x-tenant"}}}))};

  auto r = gw.post("/orders/status", items_body({"first", "o2", 7, 2.5}).dump(),
                   {{"X-Request-Id", "batch-order-1"}, {"X-Tenant", "acme"}});
  auto body = body_of(r);
  CHECK(r->status == 200);
  CHECK(r->get_header_value("Content-Type") == "application/json");
  CHECK(r->get_header_value("X-Request-Id") == "batch-order-1");
  const json expected_items = {"first", "o2", 7, 2.5};
  const std::vector<std::string> expected_ids = {"first", "o2", "7", "2.5"};
  REQUIRE(body["results"].size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& row = body["results"][i];
    CHECK(row["item"] == expected_items[i]);
    CHECK(row["status"] == "ok");
    CHECK(row["attempts"] == 1);
    CHECK(row["data"]["id"] == expected_ids[i]);
  }
  CHECK(body["results"][2]["item"].is_number_integer());
  CHECK(body["counts"] == json{{"ok", 4}, {"timeout", 0}, {"error", 0}, {"rejected", 0}});
  CHECK(body["degraded"] == false);
  CHECK(request_ids == std::set<std::string>{"batch-order-1"});
  CHECK(tenants == std::set<std::string>{"acme"});
}

TEST_CASE("items that render the same URL make one call and keep their own rows", "[batch]") {
  test_server down;
  call_log calls;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    calls.add(req.matches[1].str());
    answer_json(res, {{"id", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{batch_route_config_json("/b", batch(down.base_url() + "/o/{item}"))};

  // 7 and "7" both render /o/7.
  auto body = body_of(gw.post("/b", items_body({"a", "a", 7, "7", "b"}).dump()));
  CHECK(down.calls() == 3);
  CHECK(calls.count("a") == 1);
  CHECK(calls.count("7") == 1);
  const auto& rows = body["results"];
  REQUIRE(rows.size() == 5);
  CHECK(rows[0] == json{{"item", "a"}, {"status", "ok"}, {"data", {{"id", "a"}}}, {"attempts", 1}});
  CHECK(rows[1] == rows[0]);
  CHECK(rows[2]["item"] == 7);
  CHECK(rows[3]["item"] == "7");
  CHECK(rows[2]["data"] == rows[3]["data"]);
  CHECK(rows[4]["data"]["id"] == "b");
  CHECK(body["counts"]["ok"] == 5); // counts count rows, not calls
}

TEST_CASE("at most `concurrency` calls run at once, and the window slides", "[batch]") {
  test_server down;
  std::atomic<bool> slow_done{false};
  std::atomic<int> fast_before_slow_done{0};
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1].str() == "slow") {
      down.delay(milliseconds{1000});
      slow_done = true;
    } else {
      if (!slow_done)
        ++fast_before_slow_done;
      down.delay(milliseconds{30});
    }
    answer_json(res, {{"id", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{
    batch_route_config_json("/b", batch(down.base_url() + "/o/{item}", {{"concurrency", 3}}))};

  json items = {"slow"};
  for (int i = 0; i < 12; ++i)
    items.push_back("f" + std::to_string(i));
  auto body = body_of(gw.post("/b", items_body(items).dump()));
  CHECK(body["counts"]["ok"] == 13);
  CHECK(down.max_active() <= 3);
  CHECK(down.max_active() >= 2);
  // Fixed chunks of 3 would start only 2 fast items before the slow one ends; a sliding window runs
  // all 12 through the two free slots (12 x 30 ms / 2 = 180 ms) while the slow one takes 1000 ms.
  CHECK(fast_before_slow_done == 12);
}

TEST_CASE("an item past its timeout is `timeout` and the others keep their data", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1].str() == "hang")
      down.delay(milliseconds{5000});
    answer_json(res, {{"id", req.matches[1].str()}});
  });
  down.start();
  running_gateway gw{
    batch_route_config_json("/b", batch(down.base_url() + "/o/{item}", {{"timeout_ms", 200}}))};

  auto start = clock_type::now();
  auto body = body_of(gw.post("/b", items_body({"hang", "a"}).dump()));
  auto took = ms_since(start);
  CHECK(took >= 190);
  CHECK(took < 1500); // bounded by the item's timeout, not the batch deadline (5 s)
  CHECK(body["results"][0] == json{{"item", "hang"}, {"status", "timeout"}, {"attempts", 1}});
  CHECK(body["results"][1]["status"] == "ok");
  CHECK(body["counts"] == json{{"ok", 1}, {"timeout", 1}, {"error", 0}, {"rejected", 0}});
  CHECK(body["degraded"] == true);
}

TEST_CASE("retryable failures are retried after the backoff, other failures are not", "[batch]") {
  test_server down;
  call_log calls;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    const auto id = req.matches[1].str();
    calls.add(id);
    if (id == "flaky" && calls.count(id) == 1)
      return answer_json(res, {{"error", "busy"}}, 503);
    if (id == "gone")
      return answer_json(res, {{"error", "no such order"}}, 404);
    answer_json(res, {{"id", id}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
    "/b", batch(down.base_url() + "/o/{item}", {{"retry", {{"attempts", 3}, {"backoff_ms", 50}}}}))};

  auto start = clock_type::now();
  auto body = body_of(gw.post("/b", items_body({"flaky", "gone"}).dump()));
  CHECK(ms_since(start) >= 45); // the backoff was waited
  CHECK(body["results"][0]["status"] == "ok");
  CHECK(body["results"][0]["attempts"] == 2);
  CHECK(body["results"][1] == json{{"item", "gone"}, {"status", "error"}, {"attempts", 1}});
  CHECK(calls.count("flaky") == 2);
  CHECK(calls.count("gone") == 1);
  CHECK(body["counts"] == json{{"ok", 1}, {"timeout", 0}, {"error", 1}, {"rejected", 0}});
}

TEST_CASE("a retry that could not finish before the batch deadline is not started", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"error", "busy"}}, 503);
  });
  down.start();
  // Attempt 2 waits 100 ms and fits (100 + 300 <= 700); attempt 3 would wait 400 ms more and
  // could not end by the deadline (> 100 + 400 + 300 = 800 ms after the start).
  running_gateway gw{batch_route_config_json(
    "/b", batch(down.base_url() + "/o/{item}",
                {{"timeout_ms", 300},
                 {"deadline_ms", 700},
                 {"retry", {{"attempts", 3}, {"backoff_ms", 100}, {"multiplier", 4}}}}))};

  auto start = clock_type::now();
  auto body = body_of(gw.post("/b", items_body({"a"}).dump()));
  auto took = ms_since(start);
  CHECK(body["results"][0] == json{{"item", "a"}, {"status", "error"}, {"attempts", 2}});
  CHECK(down.calls() == 2);
  CHECK(took >= 95);
  CHECK(took < 600); // answered when the retry was refused, not at the deadline
}

TEST_CASE("the batch deadline ends running and never-started items as timeout and cancels the calls",
          "[batch]") {
  silent_server silent;
  running_gateway gw{batch_route_config_json(
    "/b", batch(silent.base_url() + "/o/{item}",
                {{"concurrency", 2}, {"timeout_ms", 5000}, {"deadline_ms", 300}}))};

  auto start = clock_type::now();
  auto body = body_of(gw.post("/b", items_body({"a", "b", "c", "d", "e"}).dump()));
  auto took = ms_since(start);
  CHECK(took >= 250);
  CHECK(took < 1500);
  const auto& rows = body["results"];
  REQUIRE(rows.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(rows[i]["status"] == "timeout");
    CHECK(rows[i]["attempts"] == (i < 2 ? 1 : 0)); // two were running, three never started
    CHECK_FALSE(rows[i].contains("data"));
  }
  CHECK(body["counts"] == json{{"ok", 0}, {"timeout", 5}, {"error", 0}, {"rejected", 0}});
  CHECK(body["degraded"] == true);
  CHECK(eventually([&] { return silent.accepted() == 2 && silent.closed_by_peer() == 2; }));
  CHECK(eventually([&] { return gw.gw().downstream_inflight() == 0; }));
}

TEST_CASE("a client that hangs up cancels the batch's calls", "[batch]") {
  silent_server silent;
  running_gateway gw{batch_route_config_json(
    "/b", batch(silent.base_url() + "/o/{item}", {{"timeout_ms", 10000}, {"deadline_ms", 10000}}))};

  auto c = gw.client();
  c.set_read_timeout(0, 300000); // gives up after 300 ms and closes the connection
  auto r = c.Post("/b", items_body({"a", "b", "c"}).dump(), "application/json");
  CHECK_FALSE(r);
  CHECK(eventually([&] { return silent.accepted() == 3 && silent.closed_by_peer() == 3; }));
  CHECK(eventually([&] { return gw.gw().downstream_inflight() == 0; }));
  CHECK(eventually([&] { return gw.gw().stats().coordinators.load() == 0; }));
}

TEST_CASE("`fields` projects every item's data", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    answer_json(res, {{"id", req.matches[1].str()},
                      {"price", {{"amount", 3}, {"currency", "CNY"}}},
                      {"secret", "internal"}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
    "/b", batch(down.base_url() + "/o/{item}", {{"fields", {"id", "price.amount", "absent.path"}}}))};

  auto body = body_of(gw.post("/b", items_body({"x", "y"}).dump()));
  CHECK(body["results"][0]["data"] == json{{"id", "x"}, {"price", {{"amount", 3}}}});
  CHECK(body["results"][1]["data"] == json{{"id", "y"}, {"price", {{"amount", 3}}}});
}

TEST_CASE("an empty batch is answered at once, and keys other than items are ignored", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"ok", true}});
  });
  down.start();
  running_gateway gw{batch_route_config_json("/b", batch(down.base_url() + "/o/{item}"))};

  auto r = gw.post("/b", R"({"items": [], "note": {"ignored": true}})");
  auto body = body_of(r);
  CHECK(r->status == 200);
  CHECK(body == json{{"results", json::array()},
                     {"counts", {{"ok", 0}, {"timeout", 0}, {"error", 0}, {"rejected", 0}}},
                     {"degraded", false}});
  CHECK(down.calls() == 0);

  auto with_extra = body_of(gw.post("/b", R"({"version": 2, "items": ["a"]})"));
  CHECK(with_extra["results"][0]["status"] == "ok");
}

TEST_CASE("a batch body that is not {\"items\": [...]} of strings and numbers is 400", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"ok", true}});
  });
  down.start();
  running_gateway gw{
    batch_route_config_json("/b", batch(down.base_url() + "/o/{item}", {{"max_items", 3}}))};

  const std::vector<std::pair<std::string, std::string>> cases = {
    {"", "not valid JSON"},
    {"{\"items\": [\"a\",", "not valid JSON"},
    {"[\"a\", \"b\"]", "must be a JSON object"},
    {"\"items\"", "must be a JSON object"},
    {"{}", "no \"items\""},
    {"{\"item\": [\"a\"]}", "no \"items\""},
    {"{\"items\": \"a\"}", "\"items\" must be an array"},
    {"{\"items\": {\"a\": 1}}", "\"items\" must be an array"},
    {"{\"items\": [\"a\", true]}", "items[1] must be a string or a number"},
    {"{\"items\": [null]}", "items[0] must be a string or a number"},
    {"{\"items\": [1, \"b\", {\"id\": 3}]}", "items[2] must be a string or a number"},
    {"{\"items\": [[\"a\"]]}", "items[0] must be a string or a number"},
    {"{\"items\": [1, 2, 3, 4]}", "too many items: 4"},
  };
  for (const auto& [text, reason] : cases) {
    INFO("body: " << text);
    auto r = gw.post("/b", text, {{"X-Request-Id", "bad-body-1"}});
    auto body = body_of(r);
    CHECK(r->status == 400);
    CHECK(body["error"] == "bad_request");
    CHECK(body["request_id"] == "bad-body-1");
    CHECK(body["message"].get<std::string>().find(reason) != std::string::npos);
    CHECK(r->get_header_value("X-Request-Id") == "bad-body-1");
  }
  CHECK(down.calls() == 0);
}

TEST_CASE("a batch body over max_body_bytes is 413, a GET on a batch route 405", "[batch]") {
  test_server down;
  down.get(R"(/o/([^/]+))", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"ok", true}});
  });
  down.start();
  running_gateway gw{batch_route_config_json("/b", batch(down.base_url() + "/o/{item}"),
                                             {{"max_body_bytes", 200}})};

  json items = json::array();
  for (int i = 0; i < 40; ++i)
    items.push_back("order-" + std::to_string(i));
  auto too_large = gw.post("/b", items_body(items).dump());
  REQUIRE(too_large);
  CHECK(too_large->status == 413);
  CHECK(body_of(too_large)["error"] == "payload_too_large");

  auto get = gw.get("/b");
  REQUIRE(get);
  CHECK(get->status == 405);
  CHECK(get->get_header_value("Allow") == "POST");
  CHECK(body_of(get)["error"] == "method_not_allowed");
  CHECK(down.calls() == 0);
}

TEST_CASE("a large batch: every row carries its own item's data", "[batch]") {
  test_server down;
  const std::string pad(4000, 'x');
  down.get(R"(/o/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    answer_json(res, {{"id", req.matches[1].str()}, {"pad", pad}});
  });
  down.start();
  running_gateway gw{batch_route_config_json(
    "/b", batch(down.base_url() + "/o/{item}", {{"concurrency", 32}, {"max_items", 500}}))};

  json items = json::array();
  for (int i = 0; i < 500; ++i)
    items.push_back(i % 5 == 4 ? json(i - 1) : json(i)); // every fifth item repeats its neighbour
  auto body = body_of(gw.post("/b", items_body(items).dump()));
  CHECK(down.calls() == 400);
  REQUIRE(body["results"].size() == 500);
  CHECK(body["counts"]["ok"] == 500);
  for (std::size_t i = 0; i < 500; ++i) {
    const auto& row = body["results"][i];
    if (row["item"] != items[i] || row["data"]["id"] != std::to_string(items[i].get<int>()) ||
        row["data"]["pad"] != pad)
      FAIL("row " << i << " is " << row.dump().substr(0, 120));
  }
}
