// A section's answer: in parallel, past its timeout or the deadline, failed, fallback_from, fields.
//
// The aggregate path end to end: real downstreams on 127.0.0.1, the real gateway, real HTTP.
// Timing assertions keep margins a loaded 2-core machine keeps.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "support/test_helpers.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

TEST_CASE("sections run in parallel: three 300 ms sections answer in well under 900 ms", "[gateway]") {
  test_server down;
  down.get(R"(/slow/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    down.delay(milliseconds{300});
    answer_json(res, {{"who", req.matches[1].str()}});
  });
  down.start();
  auto b = down.base_url();
  running_gateway gw{route_config_json(
    "/p/{id}",
    {section("a", b + "/slow/a", 2000, {{"required", true}}), optional_section("b", b + "/slow/b", 2000),
     optional_section("c", b + "/slow/c", 2000)},
    3000)};
  auto start = clock_type::now();
  auto r = gw.get("/p/1");
  auto took = ms_since(start);
  auto body = body_of(r);
  CHECK(r->status == 200);
  CHECK(took >= 290);
  CHECK(took < 600);
  CHECK(body["degraded"] == false);
  CHECK(body["warnings"] == json::array());
  CHECK(body["data"]["b"]["who"] == "b");
  for (auto name : {"a", "b", "c"}) {
    CHECK(body["sections"][name]["status"] == "ok");
    CHECK(body["sections"][name]["source"] == "live");
    CHECK(body["sections"][name]["attempts"] == 1);
  }
  CHECK(r->get_header_value("Content-Type") == "application/json");
  CHECK(r->has_header("X-Request-Id"));
}

TEST_CASE("a section past its timeout shows its fallback, the others their data", "[gateway]") {
  test_server down;
  down.get("/fast", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"v", 1}}); });
  down.get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{2000});
    answer_json(res, {{"v", 2}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {section("fast", down.base_url() + "/fast", 1000, {{"required", true}}),
           optional_section("slow", down.base_url() + "/slow", 100, {{"fallback", {{"score", 0}}}})},
    1500)};
  auto start = clock_type::now();
  auto body = body_of(gw.get("/p"));
  CHECK(ms_since(start) < 1000);
  CHECK(body["data"]["fast"] == json{{"v", 1}});
  CHECK(body["data"]["slow"] == json{{"score", 0}});
  CHECK(body["sections"]["slow"]["status"] == "timeout");
  CHECK(body["sections"]["slow"]["source"] == "fallback");
  CHECK(body["sections"]["slow"]["attempts"] == 1);
  CHECK(body["degraded"] == true);
  CHECK(body["warnings"] == json::array({"slow_timeout"}));
}

TEST_CASE("the deadline answers while a section hangs with a longer timeout", "[gateway]") {
  // The coordinator multiplexes with `then`: its deadline message is not held back by the
  // outstanding request to the hung worker (an `await` would hold it for the full 5 s).
  silent_server hung;
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", true}}); });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {section("base", down.base_url() + "/ok", 1000, {{"required", true}}),
           optional_section("hung", hung.base_url() + "/x", 5000)},
    250)};
  auto start = clock_type::now();
  auto body = body_of(gw.get("/p"));
  auto took = ms_since(start);
  CHECK(took >= 240);
  CHECK(took < 1000);
  CHECK(body["sections"]["hung"]["status"] == "timeout");
  CHECK(body["sections"]["hung"]["attempts"] == 1);
  CHECK(body["sections"]["hung"]["ms"].get<int>() >= 200);
  CHECK(body["sections"]["base"]["status"] == "ok");
  // The hung call is cancelled once the answer leaves: its connection is closed.
  CHECK(eventually([&] { return hung.closed_by_peer() == 1; }));
  CHECK(eventually([&] { return gw.gw().downstream_inflight() == 0; }));
}

TEST_CASE("a required section that fails turns the request into the contract's error", "[gateway]") {
  silent_server hung;
  test_server down;
  down.get("/missing", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"e", 1}}, 404); });
  down.get("/broken", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"e", 1}}, 500); });
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  auto b = down.base_url();
  auto run = [&](const std::string& url) {
    running_gateway gw{route_config_json(
      "/p", {section("base", url, 200, {{"required", true}}), optional_section("other", b + "/ok", 200)}, 1000)};
    return gw.get("/p", {{"X-Request-Id", "req-1"}});
  };
  SECTION("404 is not_found") {
    auto r = run(b + "/missing");
    CHECK(r->status == 404);
    CHECK(body_of(r) == json{{"error", "not_found"}, {"request_id", "req-1"}, {"section", "base"}});
  }
  SECTION("500 is upstream_unavailable") {
    auto r = run(b + "/broken");
    CHECK(r->status == 503);
    CHECK(body_of(r) == json{{"error", "upstream_unavailable"}, {"request_id", "req-1"}, {"section", "base"}});
  }
  SECTION("a timeout is upstream_timeout") {
    auto r = run(hung.base_url() + "/x");
    CHECK(r->status == 504);
    CHECK(body_of(r) == json{{"error", "upstream_timeout"}, {"request_id", "req-1"}, {"section", "base"}});
  }
  SECTION("a connection failure is upstream_unavailable") {
    auto r = run("http://127.0.0.1:1/x");
    CHECK(r->status == 503);
    CHECK(body_of(r)["error"] == "upstream_unavailable");
  }
}

TEST_CASE("the first required section in route order names the error, and fails fast", "[gateway]") {
  silent_server hung;
  test_server down;
  down.get("/broken", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {}, 500); });
  down.start();
  SECTION("an earlier required section still running decides") {
    running_gateway gw{route_config_json(
      "/p", {section("first", hung.base_url() + "/x", 300, {{"required", true}}),
             section("second", down.base_url() + "/broken", 300, {{"required", true}})},
      2000)};
    auto r = gw.get("/p");
    CHECK(r->status == 504);
    CHECK(body_of(r)["section"] == "first");
  }
  SECTION("a failed required section answers before slow optional ones finish") {
    running_gateway gw{route_config_json(
      "/p", {section("first", down.base_url() + "/broken", 300, {{"required", true}}),
             optional_section("slow", hung.base_url() + "/x", 3000)},
      4000)};
    auto start = clock_type::now();
    auto r = gw.get("/p");
    CHECK(r->status == 503);
    CHECK(ms_since(start) < 1500);
  }
}

TEST_CASE("bodies that are null, not JSON, too deep or a redirect are errors", "[gateway]") {
  test_server down;
  down.get("/null", [](const httplib::Request&, httplib::Response& res) { res.set_content("null", "application/json"); });
  down.get("/text", [](const httplib::Request&, httplib::Response& res) { res.set_content("<html>oops", "text/html"); });
  down.get("/deep", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(100000, '[') + std::string(100000, ']'), "application/json");
  });
  down.get("/redirect", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("http://127.0.0.1:1/elsewhere"); });
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", 1}}); });
  down.start();
  auto b = down.base_url();
  running_gateway gw{route_config_json(
    "/p", {section("base", b + "/ok", 500, {{"required", true}}),
           optional_section("n", b + "/null", 500, {{"fallback", "F"}}),
           optional_section("t", b + "/text", 500, {{"fallback", "F"}}),
           optional_section("d", b + "/deep", 500, {{"fallback", "F"}}),
           optional_section("r", b + "/redirect", 500, {{"fallback", "F"}})},
    2000)};
  auto body = body_of(gw.get("/p"));
  for (auto name : {"n", "t", "d", "r"}) {
    INFO(name);
    CHECK(body["sections"][name]["status"] == "error");
    CHECK(body["sections"][name]["source"] == "fallback");
    CHECK(body["data"][name] == "F");
  }
  CHECK(body["warnings"] == json::array({"n_error", "t_error", "d_error", "r_error"}));
  // Nothing about downstreams leaks into the response.
  auto text = body.dump();
  CHECK(text.find("127.0.0.1") == std::string::npos);
  CHECK(text.find("http_status") == std::string::npos);
}

TEST_CASE("fallback_from reads another section's data as it appears in the response", "[gateway]") {
  test_server down;
  down.get("/base", [](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"id", "42"}, {"stock", {{"available", 3}}}});
  });
  down.get("/fail", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {}, 500); });
  down.start();
  auto b = down.base_url();
  running_gateway gw{route_config_json(
    "/p", {section("base", b + "/base", 500, {{"required", true}}),
           section("stock", b + "/fail", 500, {{"fallback_from", "base.stock"}}),
           section("absent", b + "/fail", 500, {{"fallback_from", "base.nothing"}, {"fallback", "dflt"}}),
           section("nothing", b + "/fail", 500, {{"fallback_from", "base.nothing"}})},
    2000)};
  auto body = body_of(gw.get("/p"));
  CHECK(body["data"]["stock"] == json{{"available", 3}});
  CHECK(body["sections"]["stock"]["source"] == "fallback");
  CHECK(body["data"]["absent"] == "dflt");
  CHECK(body["data"]["nothing"].is_null());
}

TEST_CASE("fields keeps only the listed paths of the downstream object", "[gateway]") {
  test_server down;
  down.get("/reviews", [](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"score", 4.5}, {"count", 10}, {"internal", "secret"}, {"meta", {{"a", 1}, {"b", 2}}}});
  });
  down.start();
  running_gateway gw{route_config_json(
    "/p", {section("reviews", down.base_url() + "/reviews", 500,
                   {{"required", true}, {"fields", {"score", "meta.a", "missing.path"}}})},
    1000)};
  auto body = body_of(gw.get("/p"));
  CHECK(body["data"]["reviews"] == json{{"score", 4.5}, {"meta", {{"a", 1}}}});
}
