// The CORS policy alone: which origins get the headers, what a preflight answers.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gather/admission/cors_policy.hpp"

using gather::cors_config;

namespace {

std::string header(const gather::header_list& headers, const std::string& name) {
  const auto it = std::find_if(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
  return it == headers.end() ? std::string("<absent>") : it->second;
}

cors_config shop() {
  cors_config cors;
  cors.allow_origins = {"https://shop.example.com", "http://127.0.0.1:3000"};
  cors.allow_headers = {"authorization", "x-tenant"};
  cors.expose_headers = {"X-Request-Id"};
  cors.max_age_s = 600;
  return cors;
}

} // namespace

TEST_CASE("CORS: an allowed origin gets its own origin back, another none", "[unit][cors]") {
  const auto cors = shop();
  const auto allowed = gather::cors_answer_headers(cors, "https://shop.example.com");
  CHECK(header(allowed, "Access-Control-Allow-Origin") == "https://shop.example.com");
  CHECK(header(allowed, "Vary") == "Origin");
  CHECK(header(allowed, "Access-Control-Expose-Headers") == "X-Request-Id");
  CHECK(header(allowed, "Access-Control-Allow-Credentials") == "<absent>");
  CHECK(gather::cors_answer_headers(cors, "HTTPS://Shop.Example.com").size() == 3);
  CHECK(gather::cors_answer_headers(cors, "https://evil.example.com").empty());
  CHECK(gather::cors_answer_headers(cors, "https://shop.example.com:8443").empty());
  CHECK(gather::cors_answer_headers(cors, "null").empty());
  CHECK(gather::cors_answer_headers(cors, "").empty());

  auto any = shop();
  any.allow_origins.clear();
  any.any_origin = true;
  CHECK(header(gather::cors_answer_headers(any, "https://anyone.example"), "Access-Control-Allow-Origin") == "*");

  auto credentials = shop();
  credentials.allow_credentials = true;
  CHECK(header(gather::cors_answer_headers(credentials, "http://127.0.0.1:3000"),
               "Access-Control-Allow-Credentials") == "true");
}

TEST_CASE("CORS: a preflight is allowed for the route's method and the allowed headers only", "[unit][cors]") {
  CHECK(gather::is_preflight("OPTIONS", true, true));
  CHECK_FALSE(gather::is_preflight("OPTIONS", true, false));
  CHECK_FALSE(gather::is_preflight("OPTIONS", false, true));
  CHECK_FALSE(gather::is_preflight("GET", true, true));

  const auto cors = shop();
  const auto ok = gather::cors_preflight(cors, "https://shop.example.com", "GET", "X-Tenant, authorization", "GET");
  REQUIRE(ok.allowed);
  CHECK(header(ok.headers, "Access-Control-Allow-Origin") == "<absent>"); // any answer's, added once
  CHECK(header(ok.headers, "Access-Control-Allow-Methods") == "GET");
  CHECK(header(ok.headers, "Access-Control-Allow-Headers") == "x-tenant, authorization");
  CHECK(header(ok.headers, "Access-Control-Max-Age") == "600");

  const auto no_headers = gather::cors_preflight(cors, "https://shop.example.com", "POST", "", "POST");
  REQUIRE(no_headers.allowed);
  CHECK(header(no_headers.headers, "Access-Control-Allow-Headers") == "<absent>");

  CHECK(gather::cors_preflight(cors, "https://evil.example.com", "GET", "", "GET").refusal == "origin");
  CHECK(gather::cors_preflight(cors, "https://shop.example.com", "POST", "", "GET").refusal == "method");
  CHECK(gather::cors_preflight(cors, "https://shop.example.com", "get", "", "GET").refusal == "method");
  const auto header_refused =
      gather::cors_preflight(cors, "https://shop.example.com", "GET", "x-tenant, x-admin", "GET");
  CHECK_FALSE(header_refused.allowed);
  CHECK(header_refused.refusal == "header x-admin");
}

#include "gather/admission/admission.hpp"
#include "support/serving_fixture.hpp"

TEST_CASE("admission: a CORS preflight is answered right after the route, before the method", "[unit][cors][admission]") {
  gather::test::serving_fixture f{R"({"max_inflight": 1, "routes": [
    {"path": "/p/{id}", "sections": [{"name": "a", "url": "http://127.0.0.1:1/a", "timeout_ms": 10, "required": true}]}],
    "cors": {"allow_origins": ["https://shop.example.com"], "allow_headers": ["x-tenant"]}})"};
  gather::gateway_stats stats;
  stats.inflight = 1; // full: a preflight needs no slot
  const std::string id = "r1";
  const auto check = [&](std::vector<std::pair<std::string, std::string>> headers, const char* target = "/p/1") {
    gather::request_head h;
    h.method = "OPTIONS";
    h.target = target;
    h.headers = std::move(headers);
    gather::admission_request request{*f.serving, h, id, stats};
    return gather::admit(request);
  };
  auto allowed = check({{"origin", "https://shop.example.com"}, {"access-control-request-method", "GET"},
                        {"access-control-request-headers", "X-Tenant"}});
  REQUIRE(allowed);
  CHECK(allowed->reply.status == 204);
  CHECK(header(allowed->reply.headers, "Access-Control-Allow-Headers") == "x-tenant");
  CHECK(allowed->detail == "CORS preflight");
  auto refused = check({{"origin", "https://shop.example.com"}, {"access-control-request-method", "PUT"}});
  REQUIRE(refused);
  CHECK(refused->reply.status == 403);
  CHECK(refused->detail == "CORS preflight refused: method");
  auto not_preflight = check({{"origin", "https://shop.example.com"}});
  REQUIRE(not_preflight);
  CHECK(not_preflight->reply.status == 405);
  auto no_route = check({{"origin", "https://shop.example.com"}, {"access-control-request-method", "GET"}}, "/q");
  REQUIRE(no_route);
  CHECK(no_route->reply.status == 404);
  CHECK(stats.inflight == 1);
}
