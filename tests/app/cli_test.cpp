// The command line of docs/cli.md, on the real binary.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <map>
#include <regex>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "support/test_helpers.hpp"
#include "support/child_process.hpp"
#include "support/test_server.hpp"

#include <thread>

using namespace gather::test;
using nlohmann::json;

namespace {



json valid_config() {
  return {{"listen", "127.0.0.1:0"},
          {"routes",
           {{{"path", "/p/{id}"},
             {"sections",
              {{{"name", "base"}, {"url", "http://127.0.0.1:1/items/{id}"}, {"timeout_ms", 100}, {"required", true}}}}}}}};
}

/// Route /p with one optional section (fallback 0) on `url`.
json one_section_config(const std::string& name, const std::string& url, int deadline_ms, int timeout_ms) {
  return {{"listen", "127.0.0.1:0"},
          {"routes",
           {{{"path", "/p"},
             {"deadline_ms", deadline_ms},
             {"sections", {{{"name", name}, {"url", url}, {"timeout_ms", timeout_ms}, {"fallback", 0}}}}}}}};
}

} // namespace

TEST_CASE("the version and help flags exit 0", "[system][cli]") {
  auto v = run(binary, {"--version"});
  CHECK(v.code == 0);
  CHECK(v.out.find("gather") != std::string::npos);
  CHECK(run(binary, {"--help"}).code == 0);
}

TEST_CASE("check: a valid file exits 0 with a one-line summary", "[system][cli]") {
  auto r = run(binary, {"check", "--config", temp_file(valid_config().dump())});
  CHECK(r.code == 0);
  CHECK(r.out.find("ok") == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

TEST_CASE("check: an invalid file exits 2 and names every problem by its JSON path", "[system][cli]") {
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

TEST_CASE("check: upstream mistakes are named by their JSON path, and no name is looked up", "[system][cli][upstreams]") {
  auto cfg = valid_config();
  cfg["routes"][0]["sections"][0]["url"] = "http://prices:9002/items/{id}";
  const auto not_a_key = temp_file("not a PEM key\n");
  cfg["upstreams"] = {
      {"prices", {{"endpoints", {"10.0.0.7:9002"}}, {"outlier", {{"eject_ms", 0}}}}},
      {"library", {{"dns", "library.books.svc.cluster.local:50051"}, {"srv", "_grpc._tcp.library"}}},
      {"books", {{"dns", "books.invalid:1"}, {"tls", {{"cert_file", "/nonexistent/gw.pem"}}}}}};
  auto r = run(binary, {"check", "--config", temp_file(cfg.dump())});
  CHECK(r.code == 2);
  CHECK(r.err.find("upstreams.prices.outlier.eject_ms: must be an integer from 1 to 3600000") != std::string::npos);
  CHECK(r.err.find("upstreams.library: must have exactly one of \"endpoints\", \"dns\" and \"srv\"") != std::string::npos);
  CHECK(r.err.find("upstreams.books.tls.cert_file: cannot read \"/nonexistent/gw.pem\"") != std::string::npos);
  CHECK(r.err.find("upstreams.books.tls.cert_file: needs key_file") != std::string::npos);
  CHECK(r.err.find("routes[0].sections[0].url: names the upstream \"prices\": no port here") != std::string::npos);
  // Files that open but are no certificate and key: OpenSSL's verdict, by path too.
  auto tls = valid_config();
  tls["upstreams"] = {{"books", {{"dns", "books.invalid:1"}, {"tls", {{"cert_file", not_a_key}, {"key_file", not_a_key}}}}}};
  auto bad = run(binary, {"check", "--config", temp_file(tls.dump())});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("upstreams.books.tls: cert_file") != std::string::npos);
  // A valid one (its dns name is never looked up: .invalid would not resolve).
  auto ok = valid_config();
  ok["routes"][0]["sections"][0]["url"] = "http://books/items/{id}";
  ok["upstreams"] = {{"books", {{"dns", "books.invalid:1"}, {"health", {{"path", "/healthz"}}}}}};
  CHECK(run(binary, {"check", "--config", temp_file(ok.dump())}).code == 0);
}

TEST_CASE("serve: an invalid file exits 2 without binding", "[system][cli]") {
  auto cfg = valid_config();
  cfg["routes"] = json::array();
  auto r = run(binary, {"serve", "--config", temp_file(cfg.dump())});
  CHECK(r.code == 2);
  CHECK(r.out.find("listening") == std::string::npos);
}

TEST_CASE("serve: prints the real port, answers, drains and exits 0 on SIGTERM", "[system][cli]") {
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

TEST_CASE("demo: serves a degraded product page out of the box", "[system][cli]") {
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

TEST_CASE("serve: SIGTERM lets the request in flight finish, by its deadline, then exits 0", "[system][cli]") {
  silent_server hung;
  json cfg = one_section_config("slow", hung.base_url() + "/x", 600, 5000);
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

TEST_CASE("serve: a client that leaves just as its answer is made gets one log line and one count",
          "[system][cli]") {
  // Clients give up between 40 and 1000 ms, around the route's 50 ms deadline, so the
  // coordinator's answer and the handler's "client gone" race; the spread is wide enough that a
  // slow build (ASan at -O0, two tests at a time: 300 answers at once took over 200 ms) or a loaded
  // machine, whose answers come late, still sees both outcomes. Whichever comes first
  // counts and logs the request, never both.
  silent_server hung;
  json cfg = one_section_config("s", hung.base_url() + "/x", 50, 1000);
  cfg["max_inflight"] = 400;
  child_process gw{binary, {"serve", "--config", temp_file(cfg.dump())}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const std::string url = "http://127.0.0.1:" + std::to_string(port_of(*line)) + "/p";

  { // its idle keep-alive connections would hold the gateway's handler threads: closed at the end
    gather::downstream_client clients;
    constexpr int rounds = 4, per_round = 300;
    std::atomic<int> ended{0};
    for (int round = 1; round <= rounds; ++round) {
      for (int i = 0; i < per_round; ++i) {
        gather::transfer_request req{url, "X-Request-Id: r" + std::to_string(round) + "-" + std::to_string(i) + "\r\n",
                                     std::chrono::milliseconds{40 + (i * 7) % 960}};
        clients.submit(std::move(req), [&](gather::transfer_result&&) { ++ended; });
      }
      REQUIRE(eventually([&] { return ended == round * per_round; }, std::chrono::seconds(20)));
    }
  }
  // Everything the gateway started has ended: nothing in flight, counters still.
  httplib::Client c{"127.0.0.1", port_of(*line)};
  const std::regex count_line{R"re(gather_requests_total\{route="/p",code="(\d+)"\} (\d+))re"};
  std::map<int, long> counted;
  std::string last_scrape;
  const bool settled = eventually([&] {
    auto r = c.Get("/metrics");
    last_scrape = r ? r->body : "failed: " + httplib::to_string(r.error());
    if (!r || r->body.find("\ngather_inflight_requests 0\n") == std::string::npos)
      return false;
    counted.clear();
    for (std::sregex_iterator it{r->body.begin(), r->body.end(), count_line}, end; it != end; ++it)
      counted[std::stoi((*it)[1])] += std::stol((*it)[2]);
    return true;
  });
  INFO("last scrape: " << last_scrape);
  REQUIRE(settled);
  gw.signal(SIGTERM);
  REQUIRE(gw.wait_exit() == 0);

  std::map<std::string, int> lines_per_id;
  std::map<int, long> logged;
  std::istringstream err{gw.err()};
  for (std::string l; std::getline(err, l);) {
    auto record = json::parse(l, nullptr, false);
    if (record.is_discarded() || !record.contains("request_id"))
      continue;
    ++lines_per_id[record["request_id"].get<std::string>()];
    ++logged[record["status"].get<int>()];
  }
  INFO("counted by status: " << json(counted).dump() << "; logged: " << json(logged).dump());
  CHECK(counted == logged);
  CHECK(counted.count(200) == 1); // the race was run: both outcomes happened
  CHECK(counted.count(499) == 1);
  std::vector<std::string> logged_twice;
  for (const auto& [id, n] : lines_per_id)
    if (n > 1)
      logged_twice.push_back(id);
  CHECK(logged_twice.empty());
}
