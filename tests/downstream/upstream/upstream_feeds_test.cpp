// An upstream's feeds end to end (docs/upstreams.md): a gateway whose upstream's endpoints come
// from its lookups (a `dns` name in a private /etc/hosts, rewritten under the running gateway)
// and whose health checks take a failing instance out of rotation and bring it back; real HTTP
// servers on 127.0.0.2 and .3, the gateway in this process, the lookups over c-ares on its loops.
#include <catch2/catch.hpp>

#include <array>
#include <thread>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <httplib.h>

#include "gather/config/config.hpp"
#include "support/child_process.hpp"
#include "support/private_etc.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using gather::test::eventually;
using gather::test::running_gateway;
using gather::test::test_server;

namespace {

/// Two instances of one service on 127.0.0.2 and .3, on one port (a `dns` name's addresses share
/// it), each answering {"who": N} on /p/{id} and /healthz with a status the test sets.
struct feed_instances {
  std::array<std::unique_ptr<test_server>, 2> servers;
  std::array<std::atomic<int>, 2> health{};
  std::array<std::atomic<int>, 2> pages{}; ///< calls of /p/ (a probe is not one)

  feed_instances() {
    for (int i = 0; i < 2; ++i) {
      health[i] = 200;
      auto s = std::make_unique<test_server>();
      s->get(R"(/p/(\d+))", [this, i](const httplib::Request&, httplib::Response& res) {
        ++pages[i];
        res.set_content(json{{"who", i + 2}}.dump(), "application/json");
      });
      s->get("/healthz", [this, i](const httplib::Request&, httplib::Response& res) {
        res.status = health[i].load();
        res.set_content("{}", "application/json");
      });
      s->start_on("127.0.0." + std::to_string(i + 2), i == 0 ? 0 : servers[0]->port());
      servers[i] = std::move(s);
    }
  }
  int port() const { return servers[0]->port(); }
};

json feeds_gateway_config(json upstream) {
  json section = gather::test::section("s", "http://prices/p/{id}", 2000, {{"required", true}});
  return gather::test::route_config_json("/p/{id}", json::array({section}), 5000,
                                         {{"upstreams", {{"prices", std::move(upstream)}}}, {"io_threads", 2}});
}

int feed_requests(const running_gateway& gw, int n) { return gather::test::answered_ok(gw, "/p/", n); }

json prices_view(const running_gateway& gw) {
  auto res = gw.client().Get("/debug/upstreams");
  if (!res || res->status != 200)
    return json::object();
  return json::parse(res->body).at("upstreams").at("prices");
}

std::string state_of(const json& view, const std::string& address) {
  for (const auto& e : view.value("endpoints", json::array()))
    if (e.at("address") == address)
      return e.at("state");
  return "";
}

/// The value of one metric line ("name{labels} value"), -1 when it is not there.
double metric_line(const running_gateway& gw, const std::string& name_and_labels) {
  auto res = gw.client().Get("/metrics");
  if (!res)
    return -1;
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name_and_labels + " ", 0) == 0)
      return std::stod(line.substr(name_and_labels.size() + 1));
  return -1;
}

std::string feeds_file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::string feeds_hosts_marker = "# gather-test: a private /etc/hosts for upstream feeds\n";
const std::string feeds_inner_test = "upstream feeds inside a mount namespace: a dns upstream follows its name";

} // namespace

TEST_CASE("upstream feeds: a health check takes a failing instance out of rotation and brings it back", "[upstreams][health]") {
  feed_instances up;
  const auto a = up.servers[0]->address(), b = up.servers[1]->address();
  running_gateway gw(feeds_gateway_config(
      {{"endpoints", {a, b}}, {"balance", "round_robin"},
       {"health", {{"path", "/healthz"}, {"interval_ms", 100}, {"timeout_ms", 500}, {"unhealthy", 2}, {"healthy", 1}}}}));
  REQUIRE(feed_requests(gw, 20) == 20);
  CHECK(state_of(prices_view(gw), a) == "available");

  up.health[0] = 503;
  REQUIRE(eventually([&] { return state_of(prices_view(gw), a) == "unhealthy"; }));
  const auto before = up.pages[0].load();
  REQUIRE(feed_requests(gw, 20) == 20);
  CHECK(up.pages[0] == before); // every page went to b; a got only its probes
  const auto view = prices_view(gw);
  CHECK(state_of(view, b) == "available");
  for (const auto& e : view.at("endpoints"))
    if (e.at("address") == a)
      CHECK(e.at("last_probe") == "unhealthy");
  CHECK(metric_line(gw, R"(gather_upstream_health_checks_total{upstream="prices",result="unhealthy"})") >= 2);
  CHECK(metric_line(gw, R"(gather_upstream_endpoints{upstream="prices",state="unhealthy"})") == 1);

  up.health[0] = 200;
  REQUIRE(eventually([&] { return state_of(prices_view(gw), a) == "available"; }));
  const auto a_before = up.pages[0].load();
  REQUIRE(feed_requests(gw, 20) == 20);
  CHECK(up.pages[0] - a_before >= 8); // round robin: about half again
}

TEST_CASE("upstream feeds: a reload that drops health stops the probes", "[upstreams][health]") {
  feed_instances up;
  const auto a = up.servers[0]->address(), b = up.servers[1]->address();
  auto cfg = feeds_gateway_config({{"endpoints", {a, b}},
                                   {"health", {{"path", "/healthz"}, {"interval_ms", 100}}}});
  running_gateway gw(cfg);
  // Probes reach both instances without any request.
  REQUIRE(eventually([&] { return up.servers[0]->calls() >= 2 && up.servers[1]->calls() >= 2; }));
  cfg["upstreams"]["prices"].erase("health");
  REQUIRE(gw.gw().reload(gather::load_config(cfg.dump()), "test"));
  // Once the reload's stop has run on the loop no probe leaves: the counts stand still.
  std::this_thread::sleep_for(150ms); // a probe already in flight may still land
  const auto settled = up.servers[0]->calls() + up.servers[1]->calls();
  std::this_thread::sleep_for(400ms); // four intervals with no probe (nothing to wait for: an absence)
  CHECK(up.servers[0]->calls() + up.servers[1]->calls() == settled);
}

TEST_CASE("upstream feeds: a dns upstream's endpoints follow its name, a private /etc/hosts rewritten under it", "[upstreams][dns]") {
  // The gateway runs in this binary again, under `unshare --mount` with a hosts file and a
  // resolv.conf (nameserver 127.0.0.1, where nobody answers) bind-mounted over the machine's for
  // that process alone: none of the machine's files touched, no query leaving the machine.
  if (!gather::test::can_make_mount_namespace()) {
    WARN("skipped: unshare --mount needs root (CI runs it)");
    return;
  }
  const std::string hosts = gather::test::temp_file(feeds_hosts_marker, ".hosts");
  const std::string resolv = gather::test::temp_file("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n", ".conf");
  auto r = gather::test::run_with_private_etc(hosts, resolv, "GATHER_TEST_FEEDS_HOSTS", feeds_inner_test);
  INFO(r.out << r.err);
  CHECK(gather::test::inner_run_passed(r));
  std::remove(hosts.c_str());
  std::remove(resolv.c_str());
}

// Hidden ([.]): run only by the test above, inside its mount namespace.
TEST_CASE("upstream feeds inside a mount namespace: a dns upstream follows its name", "[.][upstream_feeds_inside]") {
  const char* path = std::getenv("GATHER_TEST_FEEDS_HOSTS");
  if (!path) {
    SUCCEED("GATHER_TEST_FEEDS_HOSTS is not set: run only by the test above, inside its namespace");
    return;
  }
  REQUIRE(feeds_file_text("/etc/hosts").find(feeds_hosts_marker) != std::string::npos); // the private copy
  std::ofstream{path} << "127.0.0.2 prices.test\n127.0.0.3 prices.test\n" << feeds_hosts_marker;
  feed_instances up;
  const auto a = up.servers[0]->address(), b = up.servers[1]->address();
  running_gateway gw(feeds_gateway_config({{"dns", "prices.test:" + std::to_string(up.port())},
                                           {"refresh_ms", 1000}, {"balance", "round_robin"}}));
  REQUIRE(eventually([&] { return prices_view(gw).value("endpoints", json::array()).size() == 2; }));
  CHECK(prices_view(gw)["last_lookup"]["result"] == "ok");
  REQUIRE(feed_requests(gw, 20) == 20);
  CHECK(up.pages[0] >= 8);
  CHECK(up.pages[1] >= 8);

  // The name loses an address: that endpoint leaves, the calls go to the other.
  std::ofstream{path} << "127.0.0.3 prices.test\n" << feeds_hosts_marker;
  REQUIRE(eventually([&] { return state_of(prices_view(gw), a) != "available"; }, 5s));
  const auto a_calls = up.pages[0].load();
  REQUIRE(feed_requests(gw, 20) == 20);
  CHECK(up.pages[0] == a_calls);

  // The name gone from the hosts file: the resolver asks DNS, where nobody answers: an error,
  // and the last good set is kept, so the calls still go to b.
  std::ofstream{path} << feeds_hosts_marker;
  REQUIRE(eventually([&] {
    return metric_line(gw, R"(gather_upstream_lookups_total{upstream="prices",result="error"})") >= 1;
  }, 6s));
  CHECK(state_of(prices_view(gw), b) == "available");
  REQUIRE(feed_requests(gw, 10) == 10);
}
