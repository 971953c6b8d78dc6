// The calls a request makes: forwarded headers, X-Request-Id, dependencies, retries, captures.
//
// The aggregate path end to end: real downstreams on 127.0.0.1, the real gateway, real HTTP.
// Timing assertions keep margins a loaded 2-core machine keeps.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "support/test_helpers.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

TEST_CASE("only forward_headers and X-Request-Id reach the downstream", "[gateway]") {
  std::mutex m;
  httplib::Headers seen;
  test_server down;
  down.get("/h", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> g{m};
    seen = req.headers;
    answer_json(res, {{"ok", 1}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {section("h", down.base_url() + "/h?tenant={header.x-tenant}", 500,
                   {{"required", true}, {"forward_headers", {"X-Tenant"}}})},
    1000)};
  auto r = gw.get("/p", {{"X-Tenant", "acme"}, {"Authorization", "Bearer secret"}, {"Cookie", "a=b"},
                         {"X-Request-Id", "abc-123"}});
  CHECK(r->status == 200);
  CHECK(r->get_header_value("X-Request-Id") == "abc-123");
  std::lock_guard<std::mutex> g{m};
  auto value = [&](const char* name) {
    auto it = seen.find(name);
    return it == seen.end() ? std::string{"<absent>"} : it->second;
  };
  CHECK(value("X-Tenant") == "acme");
  CHECK(value("X-Request-Id") == "abc-123");
  CHECK(value("Authorization") == "<absent>");
  CHECK(value("Cookie") == "<absent>");
}

TEST_CASE("X-Request-Id: a valid inbound id is kept, anything else replaced, on every response", "[gateway]") {
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  running_gateway gw{route_config_json("/p", {section("s", down.base_url() + "/ok", 500, {{"required", true}})}, 1000)};
  CHECK(gw.get("/p", {{"X-Request-Id", "A.b_c-9"}})->get_header_value("X-Request-Id") == "A.b_c-9");
  auto replaced = gw.get("/p", {{"X-Request-Id", "bad id with spaces"}})->get_header_value("X-Request-Id");
  CHECK(replaced != "bad id with spaces");
  CHECK(replaced.size() == 32);
  auto too_long = gw.get("/p", {{"X-Request-Id", std::string(65, 'a')}})->get_header_value("X-Request-Id");
  CHECK(too_long.size() == 32);
  auto missing = gw.get("/nowhere", {{"X-Request-Id", "r-404"}});
  CHECK(missing->status == 404);
  CHECK(missing->get_header_value("X-Request-Id") == "r-404");
  CHECK(body_of(missing) == json{{"error", "no_route"}, {"request_id", "r-404"}});
}

TEST_CASE("dependent sections start after their dependency, or are skipped", "[gateway]") {
  std::atomic<int> coupon_calls{0};
  std::string coupon_path;
  std::mutex m;
  test_server down;
  down.get("/promo/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"id", "spring 10/x"}}); });
  down.get("/promo/noid", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"label", "x"}}); });
  down.get("/promo/obj", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"id", {{"a", 1}}}}); });
  down.get("/promo/fail", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {}, 500); });
  down.get(R"(/coupons/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    ++coupon_calls;
    std::lock_guard<std::mutex> g{m};
    coupon_path = req.target;
    answer_json(res, json::array({"C1"}));
  });
  down.start();
  auto b = down.base_url();
  running_gateway gw{route_config_json(
    "/p/{kind}", {optional_section("promo", b + "/promo/{kind}", 500, {{"fallback", {{"id", nullptr}}}}),
                  optional_section("coupon", b + "/coupons/{promo.id}", 500, {{"fallback", json::array()}})},
    2000)};
  SECTION("ok: the field is substituted, percent-encoded") {
    auto body = body_of(gw.get("/p/ok"));
    CHECK(body["sections"]["coupon"]["status"] == "ok");
    CHECK(body["data"]["coupon"] == json::array({"C1"}));
    std::lock_guard<std::mutex> g{m};
    CHECK(coupon_path == "/coupons/spring%2010%2Fx");
  }
  for (auto kind : {"noid", "obj", "fail"}) {
    SECTION(std::string{"skipped when the dependency is "} + kind) {
      auto body = body_of(gw.get(std::string{"/p/"} + kind));
      CHECK(body["sections"]["coupon"]["status"] == "skipped");
      CHECK(body["sections"]["coupon"]["attempts"] == 0);
      CHECK(body["sections"]["coupon"]["source"] == "fallback");
      CHECK(body["data"]["coupon"] == json::array());
      CHECK(coupon_calls == 0);
    }
  }
}

TEST_CASE("a section waiting for a dependency at the deadline is skipped", "[gateway]") {
  silent_server hung;
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {optional_section("first", hung.base_url() + "/x", 5000, {{"fallback", {{"id", 0}}}}),
           optional_section("then", down.base_url() + "/ok?id={first.id}", 500)},
    300)};
  auto body = body_of(gw.get("/p"));
  CHECK(body["sections"]["first"]["status"] == "timeout");
  CHECK(body["sections"]["then"]["status"] == "skipped");
  CHECK(body["warnings"] == json::array({"first_timeout", "then_skipped"}));
}

TEST_CASE("retries: after 503 yes, after 400 no, past the deadline never", "[gateway]") {
  std::atomic<int> flaky_calls{0}, bad_calls{0}, late_calls{0};
  test_server down;
  down.get("/flaky", [&](const httplib::Request&, httplib::Response& res) {
    if (flaky_calls++ == 0)
      return answer_json(res, {}, 503);
    answer_json(res, {{"ok", 1}});
  });
  down.get("/bad", [&](const httplib::Request&, httplib::Response& res) {
    ++bad_calls;
    answer_json(res, {}, 400);
  });
  down.get("/late", [&](const httplib::Request&, httplib::Response& res) {
    ++late_calls;
    answer_json(res, {}, 503);
  });
  down.start();
  auto b = down.base_url();
  json retry = {{"attempts", 3}, {"backoff_ms", 20}};
  SECTION("503 then ok: attempts 2") {
    running_gateway gw{route_config_json("/p", {section("s", b + "/flaky", 300, {{"required", true}, {"retry", retry}})}, 2000)};
    auto body = body_of(gw.get("/p"));
    CHECK(body["sections"]["s"]["status"] == "ok");
    CHECK(body["sections"]["s"]["attempts"] == 2);
    CHECK(flaky_calls == 2);
  }
  SECTION("400 is not retried") {
    running_gateway gw{route_config_json("/p", {optional_section("s", b + "/bad", 300, {{"retry", retry}})}, 2000)};
    auto body = body_of(gw.get("/p"));
    CHECK(body["sections"]["s"]["status"] == "error");
    CHECK(body["sections"]["s"]["attempts"] == 1);
    CHECK(bad_calls == 1);
  }
  SECTION("no attempt starts that could not finish before the deadline") {
    // 503 at once; a retry needs 200 ms backoff + 300 ms timeout, but only ~400 ms are left.
    running_gateway gw{route_config_json(
      "/p", {optional_section("s", b + "/late", 300, {{"retry", {{"attempts", 3}, {"backoff_ms", 200}}}})}, 400)};
    auto start = clock_type::now();
    auto body = body_of(gw.get("/p"));
    CHECK(ms_since(start) < 350); // answered once the only possible attempt failed
    CHECK(body["sections"]["s"]["status"] == "error");
    CHECK(body["sections"]["s"]["attempts"] == 1);
    CHECK(late_calls == 1);
  }
  SECTION("backoff counts in ms") {
    running_gateway gw{route_config_json(
      "/p", {optional_section("s", b + "/late", 300, {{"retry", {{"attempts", 3}, {"backoff_ms", 50}, {"multiplier", 2}}}})}, 3000)};
    auto body = body_of(gw.get("/p"));
    CHECK(body["sections"]["s"]["attempts"] == 3);
    CHECK(body["sections"]["s"]["ms"].get<int>() >= 150); // 50 + 100 of backoff
    CHECK(late_calls == 3);
  }
}

TEST_CASE("hostile captures are percent-encoded as one path segment", "[gateway]") {
  std::mutex m;
  std::vector<std::string> targets;
  test_server down;
  down.get(R"(/items/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> g{m};
    targets.push_back(req.target);
    answer_json(res, {{"ok", 1}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p/{id}", {section("s", down.base_url() + "/items/{id}?q={query.q}", 500, {{"required", true}})}, 1000)};
  struct probe { std::string inbound, expected; };
  for (auto p : {probe{"/p/..%2F..%2Fadmin", "/items/..%2F..%2Fadmin?q="},
                 probe{"/p/%2E%2E", "/items/%2E%2E?q="},
                 probe{"/p/..", "/items/%2E%2E?q="},
                 probe{"/p/a%3Fx%3D1%26y", "/items/a%3Fx%3D1%26y?q="},
                 probe{"/p/100%25%20off", "/items/100%25%20off?q="},
                 probe{"/p/1?q=a%26admin%3Dtrue%23frag", "/items/1?q=a%26admin%3Dtrue%23frag"},
                 probe{"/p/1?q=@evil.example:80/", "/items/1?q=%40evil.example%3A80%2F"}}) {
    INFO(p.inbound);
    auto r = gw.get(p.inbound);
    REQUIRE(r);
    CHECK(r->status == 200);
    std::lock_guard<std::mutex> g{m};
    REQUIRE(!targets.empty());
    CHECK(targets.back() == p.expected);
  }
}
