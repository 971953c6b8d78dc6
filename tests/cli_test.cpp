// The command line of CONTRACT §1, on the real binary.
#include <catch2/catch.hpp>

#include <csignal>
#include <regex>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/test_server.hpp"

#include <thread>

using namespace gather::test;
using nlohmann::json;

namespace {

const std::string binary = GATHER_BINARY;

int port_of(const std::string& listening_line) {
  std::smatch m;
  REQUIRE(std::regex_search(listening_line, m, std::regex{R"(listening on http://127\.0\.0\.1:(\d+))"}));
  return std::stoi(m[1]);
}

json valid_config() {
  return {{"listen", "127.0.0.1:0"},
          {"routes",
           {{{"path", "/p/{id}"},
             {"sections",
              {{{"name", "base"}, {"url", "http://127.0.0.1:1/items/{id}"}, {"timeout_ms", 100}, {"required", true}}}}}}}};
}

} // namespace

TEST_CASE("the version and help flags exit 0", "[cli]") {
  auto v = run(binary, {"--version"});
  CHECK(v.code == 0);
  CHECK(v.out.find("gather") != std::string::npos);
  CHECK(run(binary, {"--help"}).code == 0);
}

TEST_CASE("check: a valid file exits 0 with a one-line summary", "[cli]") {
  auto r = run(binary, {"check", "--config", temp_file(valid_config().dump())});
  CHECK(r.code == 0);
  CHECK(r.out.find("ok") == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

TEST_CASE("check: an invalid file exits 2 and names every problem by its JSON path", "[cli]") {
  auto cfg = valid_config();
  cfg["routes"][0]["sections"][0]["timeout_ms"] = -5;
  cfg["routes"][0]["sections"].push_back({{"name", "opt"}, {"url", "http://127.0.0.1:1/x"}, {"timeout_ms", 10}});
  cfg["bogus"] = 1;
  auto r = run(binary, {"check", "--config", temp_file(cfg.dump())});
  CHECK(r.code == 2);
  CHECK(r.err.find("routes[0].sections[0].timeout_ms") != std::string::npos);
  CHECK(r.err.find("routes[0].sections[1]") != std::string::npos);
  CHECK(r.err.find("bogus") != std::string::npos);
  CHECK(run(binary, {"check", "--config", "/nonexistent/gather.json"}).code == 2);
  CHECK(run(binary, {"check", "--config", temp_file("{not json")}).code == 2);
}

TEST_CASE("serve: an invalid file exits 2 without binding", "[cli]") {
  auto cfg = valid_config();
  cfg["routes"] = json::array();
  auto r = run(binary, {"serve", "--config", temp_file(cfg.dump())});
  CHECK(r.code == 2);
  CHECK(r.out.find("listening") == std::string::npos);
}

TEST_CASE("serve: prints the real port, answers, drains and exits 0 on SIGTERM", "[cli]") {
  child_process gw{binary, {"serve", "--config", temp_file(valid_config().dump()), "--listen", "127.0.0.1:0"}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  int port = port_of(*line);
  CHECK(port > 0);
  httplib::Client c{"127.0.0.1", port};
  auto r = c.Get("/p/1");
  REQUIRE(r);
  CHECK(r->status == 503); // base cannot connect: upstream_unavailable
  CHECK(json::parse(r->body)["error"] == "upstream_unavailable");
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
  // One JSON log line per request on stderr, with the private reason the response left out.
  auto log_line = gw.err().substr(0, gw.err().find('\n'));
  auto record = json::parse(log_line, nullptr, false);
  REQUIRE(!record.is_discarded());
  CHECK(record["status"] == 503);
  CHECK(record["sections"]["base"]["status"] == "error");
  CHECK(record["sections"]["base"].contains("detail"));
}

TEST_CASE("demo: serves a degraded product page out of the box", "[cli]") {
  child_process demo{binary, {"demo", "--listen", "127.0.0.1:0"}};
  auto line = demo.wait_for_line("listening on");
  REQUIRE(line);
  httplib::Client c{"127.0.0.1", port_of(*line)};
  c.set_read_timeout(5, 0);
  auto r = c.Get("/products/42");
  REQUIRE(r);
  CHECK(r->status == 200);
  auto body = json::parse(r->body);
  CHECK(body["sections"]["base"]["status"] == "ok");
  CHECK(body["sections"]["reviews"]["status"] == "timeout");
  CHECK(body["data"]["reviews"] == json{{"score", 0}, {"count", 0}});
  CHECK(body["degraded"] == true);
  auto stock = json::parse(c.Get("/products/1234")->body);
  CHECK(stock["sections"]["stock"]["status"] == "error");
  CHECK(stock["data"]["stock"] == json{{"available", 3}});
  demo.signal(SIGINT);
  CHECK(demo.wait_exit() == 0);
}

TEST_CASE("serve: SIGTERM lets the request in flight finish, by its deadline, then exits 0", "[cli]") {
  silent_server hung;
  json cfg = {{"listen", "127.0.0.1:0"},
              {"routes",
               {{{"path", "/p"},
                 {"deadline_ms", 600},
                 {"sections",
                  {{{"name", "slow"}, {"url", hung.base_url() + "/x"}, {"timeout_ms", 5000}, {"fallback", 0}}}}}}}};
  child_process gw{binary, {"serve", "--config", temp_file(cfg.dump())}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const int port = port_of(*line);
  int status = 0;
  std::string body;
  std::thread client([&] {
    httplib::Client c{"127.0.0.1", port};
    c.set_read_timeout(5, 0);
    if (auto r = c.Get("/p")) {
      status = r->status;
      body = r->body;
    }
  });
  REQUIRE(eventually([&] { return hung.accepted() == 1; }));
  gw.signal(SIGTERM);
  client.join();
  REQUIRE(status == 200);
  CHECK(json::parse(body)["sections"]["slow"]["status"] == "timeout");
  CHECK(gw.wait_exit() == 0);
  httplib::Client after{"127.0.0.1", port};
  after.set_connection_timeout(0, 300000);
  CHECK(!after.Get("/p")); // no longer listening
}
