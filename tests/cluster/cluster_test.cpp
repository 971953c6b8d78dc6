// The cluster with real processes: `gather node` children, a gateway in this process, real kills.
#include <catch2/catch.hpp>

#include <csignal>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "gather/values/atoms.hpp"
#include "support/child_process.hpp"
#include "support/node_child.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {


/// A `gather node` child allowed to call any origin, on `port` (0: any).
struct node_process : node_child {
  explicit node_process(int port = 0) : node_child({"--allow-any"}, port) {}
};

/// Routes: /ok (fast downstream), /hang (a downstream that never answers).
json cluster_gateway_config(const std::vector<std::string>& nodes, bool local, const std::string& ok_url,
                    const std::string& hang_url, json hang_extra = json::object()) {
  json hang = {{"name", "h"}, {"url", hang_url}, {"timeout_ms", 3000}, {"fallback", "F"}};
  for (auto& [k, v] : hang_extra.items())
    hang[k] = v;
  return {{"listen", "127.0.0.1:0"},
          {"cluster", {{"nodes", nodes}, {"local", local}}},
          {"routes",
           {{{"path", "/ok"}, {"deadline_ms", 2000},
             {"sections", {{{"name", "s"}, {"url", ok_url}, {"timeout_ms", 1000}, {"required", true}}}}},
            {{"path", "/hang"}, {"deadline_ms", 5000}, {"sections", {hang}}}}}};
}

json debug_of(running_gateway& gw) {
  return json::parse(gw.get("/debug/actors")->body);
}

std::uint64_t work_of(running_gateway& gw, const std::string& node) {
  const auto debug = debug_of(gw);
  for (const auto& n : debug["nodes"])
    if (n["node"] == node)
      return n["work"].get<std::uint64_t>();
  return 0;
}

bool all_up(running_gateway& gw, bool up = true) {
  const auto health = json::parse(gw.get("/healthz")->body);
  for (const auto& n : health["nodes"])
    if (n["up"] != up)
      return false;
  return !health["nodes"].empty();
}

void answer_ok(httplib::Response& res) {
  res.set_content(R"({"ok":true})", "application/json");
}

} // namespace

TEST_CASE("cluster: work spreads over the nodes, and a killed node fails its work at once", "[cluster]") {
  silent_server hung;
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_ok(res); });
  down.start();
  node_process a, b;
  running_gateway gw{cluster_gateway_config({a.address(), b.address()}, false, down.base_url() + "/ok", hung.base_url() + "/x")};
  REQUIRE(eventually([&] { return all_up(gw); }, milliseconds{10000}));

  for (int i = 0; i < 10; ++i)
    REQUIRE(gw.get("/ok")->status == 200);
  CHECK(work_of(gw, a.address()) >= 3);
  CHECK(work_of(gw, b.address()) >= 3);
  auto metrics = gw.get("/metrics")->body;
  CHECK(metrics.find("gather_node_up{node=\"" + a.address() + "\"} 1") != std::string::npos);

  // One hanging section on each node.
  std::vector<std::pair<long long, json>> answers(2);
  auto start = clock_type::now();
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&, i] {
      auto r = gw.get("/hang");
      answers[i] = {ms_since(start), r ? json::parse(r->body) : json{}};
    });
  REQUIRE(eventually([&] { return hung.accepted() == 2; }));
  auto killed_at = ms_since(start);
  a.child.signal(SIGKILL);
  for (auto& t : clients)
    t.join();
  // The section on the dead node ends as an error at once; the other one at its 3 s timeout.
  int errors = 0;
  for (const auto& [at, body] : answers) {
    if (body["sections"]["h"]["status"] == "error") {
      ++errors;
      CHECK(at - killed_at < 1500);
    } else {
      CHECK(body["sections"]["h"]["status"] == "timeout");
    }
  }
  CHECK(errors == 1);
  REQUIRE(eventually([&] { return !json::parse(gw.get("/healthz")->body)["nodes"][0]["up"].get<bool>(); }));

  // New work avoids the dead node.
  const auto b_before = work_of(gw, b.address());
  for (int i = 0; i < 5; ++i)
    CHECK(gw.get("/ok")->status == 200);
  CHECK(work_of(gw, b.address()) == b_before + 5);

  // The node comes back on its port and takes work again.
  node_process again{a.port()};
  REQUIRE(eventually([&] { return all_up(gw); }, milliseconds{10000}));
  const auto a_before = work_of(gw, a.address());
  for (int i = 0; i < 6; ++i)
    CHECK(gw.get("/ok")->status == 200);
  CHECK(work_of(gw, a.address()) > a_before);
}

TEST_CASE("cluster: a section whose node dies is retried elsewhere when its policy allows", "[cluster]") {
  std::atomic<int> calls{0};
  test_server down;
  down.get("/first-hangs", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0)
      down.hang(milliseconds{10000});
    answer_ok(res);
  });
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_ok(res); });
  down.start();
  node_process a, b;
  running_gateway gw{cluster_gateway_config({a.address(), b.address()}, false, down.base_url() + "/ok",
                                    down.base_url() + "/first-hangs",
                                    {{"retry", {{"attempts", 2}, {"backoff_ms", 10}}}})};
  REQUIRE(eventually([&] { return all_up(gw); }, milliseconds{10000}));
  int status = 0;
  json body;
  auto start = clock_type::now();
  std::thread client([&] {
    auto r = gw.get("/hang");
    status = r ? r->status : 0;
    body = r ? json::parse(r->body) : json{};
  });
  REQUIRE(eventually([&] { return calls == 1; }));
  // Kill whichever node holds the hanging call.
  auto victim = work_of(gw, a.address()) == 1 ? &a : &b;
  victim->child.signal(SIGKILL);
  client.join();
  CHECK(status == 200);
  CHECK(body["sections"]["h"]["status"] == "ok");
  CHECK(body["sections"]["h"]["attempts"] == 2);
  CHECK(ms_since(start) < 2500); // far before the 3 s timeout
}

TEST_CASE("cluster: a gateway started before its node serves locally, then uses the node", "[cluster]") {
  test_server down;
  down.get("/ok", [](const httplib::Request&, httplib::Response& res) { answer_ok(res); });
  down.start();
  int port = 0;
  { // a free port for the node that is not there yet
    silent_server probe;
    port = probe.port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  running_gateway gw{cluster_gateway_config({address}, false, down.base_url() + "/ok", down.base_url() + "/ok")};
  for (int i = 0; i < 3; ++i)
    CHECK(gw.get("/ok")->status == 200); // no node up: this process does the work
  CHECK(work_of(gw, address) == 0);
  node_process late{port};
  REQUIRE(eventually([&] { return all_up(gw); }, milliseconds{10000}));
  for (int i = 0; i < 3; ++i)
    CHECK(gw.get("/ok")->status == 200);
  CHECK(work_of(gw, address) == 3);
}

namespace {

/// A middleman peer that answers hello with protocol version `version`. (It takes an argument
/// because CAF 0.17's spawn of a function with no arguments binds a reference to a null
/// shared_ptr in caf/detail/init_fun_factory.hpp: harmless, but UBSan aborts on it.)
caf::behavior wrong_version_node(caf::event_based_actor*, std::int32_t version) {
  return {[version](gather::hello_atom, std::int32_t) -> caf::result<gather::hello_atom, std::int32_t> {
    return {gather::hello_atom::value, version};
  }};
}

} // namespace

TEST_CASE("cluster: a node of another protocol version is refused with a clear log line", "[cluster]") {
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  caf::actor_system system{cfg};
  auto peer = system.spawn(wrong_version_node, std::int32_t{999});
  auto port = system.middleman().publish(peer, 0, "127.0.0.1");
  REQUIRE(port);
  json config = cluster_gateway_config({"127.0.0.1:" + std::to_string(*port)}, true, "http://127.0.0.1:1/", "http://127.0.0.1:1/");
  child_process gw{binary, {"serve", "--config", temp_file(config.dump())}};
  REQUIRE(gw.wait_for_line("listening on"));
  CHECK(gw.wait_for_stderr("refused: protocol version 999"));
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
  caf::anon_send_exit(peer, caf::exit_reason::user_shutdown);
}
