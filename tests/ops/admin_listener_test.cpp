// The operations listener (`admin.listen`): /metrics, /debug/actors and /dashboard only there,
// /healthz on both, and on `listen` the operations paths become ordinary paths. Real sockets: a
// gateway in this process, a downstream on loopback, and the real binary for its start-up line.
#include <catch2/catch.hpp>

#include <regex>

#include "support/child_process.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

httplib::Client admin_client(running_gateway& gw) {
  httplib::Client c{"127.0.0.1", gw.gw().admin_port()};
  c.set_read_timeout(10, 0);
  return c;
}

} // namespace

TEST_CASE("with admin.listen the operations paths answer only on the admin port, /healthz on both",
          "[admin]") {
  test_server downstream;
  downstream.get(R"(/items/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(json{{"id", req.matches[1].str()}}.dump(), "application/json");
  });
  downstream.start();
  running_gateway gw{route_config_json(
    "/products/{id}", json::array({section("base", downstream.base_url() + "/items/{id}", 2000, {{"required", true}})}),
    3000, {{"admin", {{"listen", "127.0.0.1:0"}}}})};
  REQUIRE(gw.gw().admin_port() > 0);
  REQUIRE(gw.gw().admin_port() != gw.port());
  auto admin = admin_client(gw);

  for (const char* path : {"/metrics", "/debug/actors", "/dashboard"}) {
    INFO(path);
    auto on_main = gw.get(path);
    REQUIRE(on_main);
    CHECK(on_main->status == 404);
    CHECK(body_of(on_main)["error"] == "no_route");
    auto on_admin = admin.Get(path);
    REQUIRE(on_admin);
    CHECK(on_admin->status == 200);
  }
  CHECK(admin.Get("/metrics")->body.find("gather_requests_total") != std::string::npos);
  CHECK(body_of(admin.Get("/debug/actors")).contains("actors_running"));
  CHECK(body_of(gw.get("/healthz"))["status"] == "ok");
  CHECK(body_of(admin.Get("/healthz"))["status"] == "ok");

  // The routes are served on `listen` only: a route's path on the admin port is 404, no call made.
  auto served = gw.get("/products/7");
  REQUIRE(served);
  CHECK(served->status == 200);
  CHECK(downstream.calls() == 1);
  auto route_on_admin = admin.Get("/products/7");
  REQUIRE(route_on_admin);
  CHECK(route_on_admin->status == 404);
  CHECK(body_of(route_on_admin)["error"] == "no_route");
  CHECK(downstream.calls() == 1);
  // GET only there: a POST is 405 on an operations path, 404 elsewhere; its body is never read.
  auto post = admin.Post("/metrics", "{}", "application/json");
  REQUIRE(post);
  CHECK(post->status == 405);
  auto post_elsewhere = admin.Post("/products/7", "{}", "application/json");
  REQUIRE(post_elsewhere);
  CHECK(post_elsewhere->status == 404);
  // The admin port's requests are in the figures it shows, not counted as routed traffic.
  CHECK(admin.Get("/metrics")->body.find(R"(gather_requests_total{route="/products/{id}",code="200"} 1)") !=
        std::string::npos);
}

TEST_CASE("with admin.listen a route may take /metrics on the main listener", "[admin]") {
  test_server downstream;
  downstream.get("/mine", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"mine":true})", "application/json");
  });
  downstream.start();
  running_gateway gw{route_config_json(
    "/metrics", json::array({section("m", downstream.base_url() + "/mine", 2000, {{"required", true}})}), 3000,
    {{"admin", {{"listen", "127.0.0.1:0"}}}})};
  auto routed = gw.get("/metrics");
  REQUIRE(routed);
  CHECK(routed->status == 200);
  CHECK(body_of(routed)["data"]["m"]["mine"] == true);
  auto admin = admin_client(gw);
  auto scraped = admin.Get("/metrics");
  REQUIRE(scraped);
  CHECK(scraped->status == 200);
  CHECK(scraped->body.find("# TYPE gather_requests_total counter") != std::string::npos);
}

TEST_CASE("without admin every operations path answers on the main listener", "[admin]") {
  running_gateway gw{route_config_json("/x", json::array({section("a", "http://127.0.0.1:9/", 100, {{"required", true}})}), 500)};
  CHECK(gw.gw().admin_port() == 0);
  for (const char* path : {"/healthz", "/metrics", "/debug/actors", "/dashboard"}) {
    INFO(path);
    auto r = gw.get(path);
    REQUIRE(r);
    CHECK(r->status == 200);
  }
}

TEST_CASE("gather serve prints the admin listener's address and serves /metrics there", "[admin][process]") {
  const auto file = temp_file(json{{"listen", "127.0.0.1:0"},
                                   {"admin", {{"listen", "127.0.0.1:0"}}},
                                   {"routes", json::array({{{"path", "/x"},
                                                            {"sections", json::array({section("a", "http://127.0.0.1:9/", 100, {{"required", true}})})}}})}}
                                .dump());
  child_process gather{GATHER_BINARY, {"serve", "--config", file}};
  const auto main_line = gather.wait_for_line("listening on http://");
  REQUIRE(main_line);
  const auto admin_line = gather.wait_for_line("admin listening on http://");
  REQUIRE(admin_line);
  std::smatch m;
  REQUIRE(std::regex_search(*admin_line, m, std::regex{R"(admin listening on http://127\.0\.0\.1:(\d+))"}));
  const int admin_port = std::stoi(m[1]);
  httplib::Client admin{"127.0.0.1", admin_port};
  auto scraped = admin.Get("/metrics");
  REQUIRE(scraped);
  CHECK(scraped->status == 200);
  httplib::Client front{"127.0.0.1", port_of(*main_line)};
  auto hidden = front.Get("/metrics");
  REQUIRE(hidden);
  CHECK(hidden->status == 404);
  gather.signal(SIGTERM);
  CHECK(gather.wait_exit() == 0);
}

TEST_CASE("admin.listen is checked by JSON path", "[admin][config]") {
  const auto problems_of = [](json admin) {
    auto cfg = route_config_json("/x", json::array({section("a", "http://127.0.0.1:9/", 100, {{"required", true}})}), 500,
                                 {{"listen", "127.0.0.1:8080"}, {"admin", std::move(admin)}});
    return gather::load_config(cfg.dump()).problems;
  };
  auto has = [](const std::vector<std::string>& problems, const std::string& text) {
    for (const auto& p : problems)
      if (p.find(text) == 0)
        return true;
    return false;
  };
  CHECK(has(problems_of(json::object()), "admin.listen: is required"));
  CHECK(has(problems_of({{"listen", "nowhere"}}), "admin.listen: must be \"host:port\""));
  CHECK(has(problems_of({{"listen", 9901}}), "admin.listen: "));
  CHECK(has(problems_of({{"listen", "127.0.0.1:8080"}}), "admin.listen: must differ from the top-level listen"));
  CHECK(has(problems_of({{"listen", "127.0.0.1:9901"}, {"port", 1}}), "admin.port: "));
  CHECK(has(problems_of("127.0.0.1:9901"), "admin: must be an object"));
  CHECK(problems_of({{"listen", "127.0.0.1:9901"}}).empty());
}
