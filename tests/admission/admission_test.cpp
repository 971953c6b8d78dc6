// Admission without a socket: the contract's checks in order, on a head built by hand.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gather/admission/admission.hpp"
#include "support/serving_fixture.hpp"

using gather::admission_request;
using gather::request_head;
using nlohmann::json;

namespace {

const char* routes_json = R"({"max_inflight": 1, "max_body_bytes": 100, "routes": [
  {"path": "/p/{id}", "sections": [{"name": "a", "url": "http://127.0.0.1:1/a", "timeout_ms": 10,
                                    "required": true}]},
  {"path": "/b", "batch": {"url": "http://127.0.0.1:1/i/{item}", "timeout_ms": 10, "max_items": 2}}]})";

request_head head(std::string method, std::string target,
                  std::vector<std::pair<std::string, std::string>> headers = {}) {
  return request_head{std::move(method), std::move(target), 11, std::move(headers), "127.0.0.1", "127.0.0.1"};
}

struct checked {
  std::optional<gather::refusal> refused;
  std::int64_t inflight_after = 0;
};

} // namespace

TEST_CASE("admission: no route is 404 no_route, before the method is looked at", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const auto h = head("DELETE", "/nowhere");
  const std::string id = "r1";
  admission_request request{*f.serving, h, id, stats};
  auto refused = gather::admit(request);
  REQUIRE(refused);
  CHECK(refused->reply.status == 404);
  CHECK(json::parse(refused->reply.body) == json{{"error", "no_route"}, {"request_id", "r1"}});
  CHECK(request.route() == nullptr);
  CHECK(request.route_index() == 2);
}

TEST_CASE("admission: the route is matched once, with its captures", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const auto h = head("GET", "/p/a%20b?x=1");
  const std::string id = "r";
  admission_request request{*f.serving, h, id, stats};
  REQUIRE(request.match);
  CHECK(request.route_index() == 0);
  CHECK(request.match->captures == std::vector<std::pair<std::string, std::string>>{{"id", "a b"}});
}

TEST_CASE("admission: a wrong method is 405 with Allow naming the route's method", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const std::string id = "r";
  for (auto [method, target, allow] : {std::tuple{"POST", "/p/1", "GET"}, {"HEAD", "/p/1", "GET"},
                                       {"GET", "/b", "POST"}}) {
    const auto h = head(method, target);
    admission_request request{*f.serving, h, id, stats};
    auto refused = gather::admit(request);
    REQUIRE(refused);
    CHECK(refused->reply.status == 405);
    CHECK(refused->reply.headers == std::vector<std::pair<std::string, std::string>>{{"Allow", allow}});
  }
}

TEST_CASE("admission: a declared body over max_body_bytes is 413, before the encoding", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const std::string id = "r";
  for (std::string length : {"101", "9999999999999999999", "1000000000000000000000"}) {
    const auto h = head("POST", "/b", {{"content-length", length}, {"content-encoding", "gzip"}});
    admission_request request{*f.serving, h, id, stats};
    auto refused = gather::admit(request);
    REQUIRE(refused);
    CHECK(refused->reply.status == 413);
  }
  const auto fits = head("POST", "/b", {{"content-length", "100"}});
  admission_request request{*f.serving, fits, id, stats};
  CHECK_FALSE(gather::admit(request));
}

TEST_CASE("admission: an encoded body is 415, identity and an empty body are not", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const std::string id = "r";
  const auto gzip = head("POST", "/b", {{"content-length", "5"}, {"content-encoding", "gzip"}});
  admission_request encoded{*f.serving, gzip, id, stats};
  auto refused = gather::admit(encoded);
  REQUIRE(refused);
  CHECK(refused->reply.status == 415);
  CHECK(json::parse(refused->reply.body)["error"] == "unsupported_media_type");
  const auto identity = head("POST", "/b", {{"content-length", "5"}, {"content-encoding", "identity"}});
  admission_request plain{*f.serving, identity, id, stats};
  CHECK_FALSE(gather::admit(plain));
  const auto empty = head("POST", "/b", {{"content-length", "0"}, {"content-encoding", "gzip"}});
  admission_request no_body{*f.serving, empty, id, stats};
  CHECK_FALSE(gather::admit(no_body));
}

TEST_CASE("admission: overload only looks on the head, takes the slot with the body, gives it back",
          "[unit][admission]") {
  gather::test::serving_fixture f{routes_json}; // max_inflight 1
  gather::gateway_stats stats;
  const std::string id = "r";
  const std::string body;
  const auto h = head("GET", "/p/1");
  {
    admission_request first{*f.serving, h, id, stats};
    CHECK_FALSE(gather::admit(first)); // the head alone: nothing taken
    CHECK(stats.inflight.load() == 0);
    first.body = &body;
    CHECK_FALSE(gather::admit(first));
    CHECK(stats.inflight.load() == 1);
    CHECK(first.slot);

    admission_request second{*f.serving, h, id, stats};
    auto on_head = gather::admit(second);
    REQUIRE(on_head);
    CHECK(on_head->reply.status == 503);
    second.body = &body;
    auto refused = gather::admit(second);
    REQUIRE(refused);
    CHECK(refused->reply.status == 503);
    CHECK(refused->reply.headers == std::vector<std::pair<std::string, std::string>>{{"Retry-After", "1"}});
    CHECK(stats.overloaded.load() == 2);
    CHECK(stats.inflight.load() == 1); // the refused one holds nothing
  }
  CHECK(stats.inflight.load() == 0); // the admitted one's slot went back with it
}

TEST_CASE("admission: a bad batch body is 400 with its reason, and holds no slot", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  const std::string id = "r";
  const auto h = head("POST", "/b", {{"content-length", "20"}});
  const std::string bad = R"({"items": [1, 2, 3]})";
  admission_request request{*f.serving, h, id, stats};
  CHECK_FALSE(gather::admit(request)); // the head passes: the body may be read
  request.body = &bad;
  auto refused = gather::admit(request);
  REQUIRE(refused);
  CHECK(refused->reply.status == 400);
  CHECK(json::parse(refused->reply.body)["error"] == "bad_request");
  CHECK(json::parse(refused->reply.body).contains("message"));
  CHECK(refused->detail.rfind("bad batch body: ", 0) == 0);
  CHECK(stats.inflight.load() == 0);

  const std::string good = R"({"items": ["x", 7]})";
  admission_request ok{*f.serving, h, id, stats};
  ok.body = &good;
  CHECK_FALSE(gather::admit(ok));
  CHECK(ok.items.size() == 2);
  CHECK(stats.inflight.load() == 1);
}

TEST_CASE("admission: the first check in the contract's order names the error", "[unit][admission]") {
  gather::test::serving_fixture f{routes_json};
  gather::gateway_stats stats;
  stats.inflight = 5; // full
  const std::string id = "r";
  const std::string bad = "not json";
  // method before size, size before encoding, encoding before overload, overload before body
  const std::vector<std::pair<request_head, int>> cases = {
    {head("GET", "/b", {{"content-length", "1000"}}), 405},
    {head("POST", "/b", {{"content-length", "1000"}, {"content-encoding", "br"}}), 413},
    {head("POST", "/b", {{"content-length", "10"}, {"content-encoding", "br"}}), 415},
    {head("POST", "/b", {{"content-length", "8"}}), 503},
  };
  for (const auto& [h, status] : cases) {
    admission_request request{*f.serving, h, id, stats};
    request.body = &bad;
    auto refused = gather::admit(request);
    REQUIRE(refused);
    CHECK(refused->reply.status == status);
  }
}
