// What browser clients need, over real sockets: CORS on answers and preflights (which never reach a
// downstream), and compressed answers (gzip, br) decoded by zlib's and libbrotli's own decoders,
// whole and streamed, where a streamed line decodes the moment its chunk arrives.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/stream_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using gather::content_coding;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

const json cors = {{"allow_origins", {"https://shop.example.com"}},
                   {"allow_headers", {"authorization", "x-tenant"}},
                   {"expose_headers", {"x-request-id"}},
                   {"max_age_s", 600}};

/// One answer read whole off a raw connection.
raw_response exchange(int port, const std::string& request) {
  raw_connection c{port};
  REQUIRE(c.send(request));
  auto r = c.read_response();
  REQUIRE(r);
  return *r;
}

std::string big_json(int rows) {
  json out = json::array();
  for (int i = 0; i < rows; ++i)
    out.push_back({{"id", i}, {"title", "item number " + std::to_string(i)}, {"price", i * 3}});
  return json{{"rows", out}}.dump();
}

} // namespace

TEST_CASE("CORS: allowed origin, refused origin, preflights allowed and refused", "[cors]") {
  test_server down;
  down.get("/a", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"a", 1}}); });
  down.start();
  running_gateway gw{route_config_json("/p/{id}", {section("a", down.base_url() + "/a", 1000, {{"required", true}})},
                                       2000, {{"cors", cors}})};

  auto allowed = exchange(gw.port(), get_request("/p/1", {"Origin: https://shop.example.com"}));
  CHECK(allowed.status == 200);
  CHECK(allowed.header("access-control-allow-origin") == "https://shop.example.com");
  CHECK(allowed.header("vary") == "Origin");
  CHECK(allowed.header("access-control-expose-headers") == "x-request-id");

  auto refused = exchange(gw.port(), get_request("/p/1", {"Origin: https://evil.example.com"}));
  CHECK(refused.status == 200); // served; the browser refuses to show it
  for (const auto& [name, value] : refused.headers)
    CHECK(name.rfind("access-control-", 0) != 0);

  const int calls = down.calls();
  auto preflight = exchange(gw.port(), "OPTIONS /p/1 HTTP/1.1\r\nHost: x\r\nOrigin: https://shop.example.com\r\n"
                                       "Access-Control-Request-Method: GET\r\n"
                                       "Access-Control-Request-Headers: X-Tenant\r\n\r\n");
  CHECK(preflight.status == 204);
  CHECK(preflight.header("access-control-allow-origin") == "https://shop.example.com");
  CHECK(preflight.header("access-control-allow-methods") == "GET");
  CHECK(preflight.header("access-control-allow-headers") == "x-tenant");
  CHECK(preflight.header("access-control-max-age") == "600");
  CHECK(preflight.header("content-length").empty());
  CHECK(preflight.body.empty());

  for (const auto& [origin, method, headers] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"https://evil.example.com", "GET", ""},
           {"https://shop.example.com", "POST", ""},
           {"https://shop.example.com", "GET", "x-admin"}}) {
    auto no = exchange(gw.port(), "OPTIONS /p/1 HTTP/1.1\r\nHost: x\r\nOrigin: " + origin +
                                      "\r\nAccess-Control-Request-Method: " + method +
                                      "\r\nAccess-Control-Request-Headers: " + headers + "\r\n\r\n");
    INFO(origin << " " << method << " " << headers);
    CHECK(no.status == 403);
    CHECK(json::parse(no.body)["error"] == "forbidden");
  }
  CHECK(down.calls() == calls); // no preflight reached the downstream
  // An OPTIONS that is not a preflight is any other method; a preflight of no route is 404.
  CHECK(exchange(gw.port(), "OPTIONS /p/1 HTTP/1.1\r\nHost: x\r\n\r\n").status == 405);
  CHECK(exchange(gw.port(), "OPTIONS /q HTTP/1.1\r\nHost: x\r\nOrigin: https://shop.example.com\r\n"
                            "Access-Control-Request-Method: GET\r\n\r\n").status == 404);
}

TEST_CASE("CORS: without `cors` a preflight is 405 and no answer carries CORS headers", "[cors]") {
  test_server down;
  down.get("/a", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"a", 1}}); });
  down.start();
  running_gateway gw{route_config_json("/p/{id}", {section("a", down.base_url() + "/a", 1000, {{"required", true}})}, 2000)};
  auto preflight = exchange(gw.port(), "OPTIONS /p/1 HTTP/1.1\r\nHost: x\r\nOrigin: https://shop.example.com\r\n"
                                       "Access-Control-Request-Method: GET\r\n\r\n");
  CHECK(preflight.status == 405);
  auto plain = exchange(gw.port(), get_request("/p/1", {"Origin: https://shop.example.com"}));
  CHECK(plain.header("access-control-allow-origin").empty());
}

TEST_CASE("compression: br and gzip round trips, q=0, small answers and /metrics stay identity", "[compression]") {
  test_server down;
  const auto big = big_json(400);
  down.get("/big", [&](const httplib::Request&, httplib::Response& res) { res.set_content(big, "application/json"); });
  down.get("/small", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"s", 1}}); });
  down.start();
  auto cfg = route_config_json("/p/{id}", {section("a", down.base_url() + "/big", 2000, {{"required", true}})}, 3000,
                               {{"compression", {{"min_bytes", 1024}, {"encodings", {"br", "gzip"}}}}});
  cfg["routes"].push_back({{"path", "/s"}, {"sections", {section("s", down.base_url() + "/small", 2000, {{"required", true}})}}});
  running_gateway gw{cfg};
  const auto whole = exchange(gw.port(), get_request("/p/1"));
  REQUIRE(whole.status == 200);
  CHECK(whole.header("content-encoding").empty());
  CHECK(whole.header("vary") == "Accept-Encoding");
  const auto expected = json::parse(whole.body);

  for (const auto& [accept, coding] : std::vector<std::pair<std::string, content_coding>>{
           {"gzip, deflate, br", content_coding::br},
           {"gzip", content_coding::gzip},
           {"br;q=0, gzip;q=0.5", content_coding::gzip},
           {"BR;q=0.1", content_coding::br},
           {"br;q=0, gzip;q=0", content_coding::identity},
           {"identity", content_coding::identity}}) {
    INFO("Accept-Encoding: " << accept);
    auto r = exchange(gw.port(), get_request("/p/1", {"Accept-Encoding: " + accept}));
    REQUIRE(r.status == 200);
    CHECK(r.header("content-encoding") == (coding == content_coding::identity ? "" : coding == content_coding::br ? "br" : "gzip"));
    if (coding != content_coding::identity)
      CHECK(r.body.size() < whole.body.size() / 3);
    CHECK(json::parse(decode_whole(coding, r.body))["data"] == expected["data"]);
  }
  auto small = exchange(gw.port(), get_request("/s", {"Accept-Encoding: gzip"}));
  CHECK(small.header("content-encoding").empty());
  auto metrics = exchange(gw.port(), get_request("/metrics", {"Accept-Encoding: gzip, br"}));
  CHECK(metrics.header("content-encoding").empty());
  CHECK(metrics.body.find("gather_requests_total") != std::string::npos);
}

TEST_CASE("compression: a streamed gzip (and br) answer's first line decodes before the slow section ends",
          "[compression][stream]") {
  test_server down;
  down.get("/base", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"id", "42"}}); });
  down.get("/slow", [&down](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{1500});
    answer_json(res, {{"late", true}});
  });
  down.start();
  running_gateway gw{route_config_json(
      "/p/{id}",
      {section("base", down.base_url() + "/base", 3000, {{"required", true}}),
       optional_section("slow", down.base_url() + "/slow", 3000)},
      4000, {{"compression", {{"min_bytes", 1024}}}})};
  for (const std::string coding : {"gzip", "br"}) {
    INFO(coding);
    stream_client c{gw.port(), get_request("/p/42", {"Accept: application/x-ndjson", "Accept-Encoding: " + coding})};
    REQUIRE(c.read_head());
    CHECK(c.header("content-encoding") == coding);
    auto first = c.next_chunk();
    REQUIRE(first);
    const auto first_ms = ms_between(c.sent, first->at);
    CHECK(json::parse(first->bytes)["data"] == json{{"id", "42"}});
    auto second = c.next_chunk();
    REQUIRE(second);
    const auto second_ms = ms_between(c.sent, second->at);
    INFO("first line decoded after " << first_ms << " ms, the slow one after " << second_ms);
    CHECK(first_ms < 1000);
    CHECK(second_ms >= 1400);
    CHECK(json::parse(second->bytes)["data"] == json{{"late", true}});
    auto done = c.next_chunk();
    REQUIRE(done);
    CHECK(json::parse(done->bytes)["done"] == true);
    CHECK_FALSE(c.next_chunk());
    CHECK(c.ended());
  }
}
