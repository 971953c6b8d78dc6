// Upstreams end to end (docs/upstreams.md): a gateway whose section calls an upstream of real
// HTTP servers on 127.0.0.2, .3 and .4. Calls spread by both balancers and by weight, the Host is
// the upstream's name, an instance that answers 503 or is stopped is ejected and comes back after
// eject_ms, a retry goes to another instance, the log line names the endpoint; and upstream TLS
// with a CA, a server name and a client certificate the server demands (all made by the test).
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <thread>

#include <httplib.h>

#include "support/gateway_fixture.hpp"
#include "support/grpc_library.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using nlohmann::json;
using gather::test::running_gateway;
using gather::test::test_server;

namespace {

/// Three instances of one service, each answering {"who": N} on /p/{id} (N: 2, 3 or 4, its
/// address's last number) and counting the Host it was sent.
struct three_instances {
  std::vector<std::unique_ptr<test_server>> servers;
  std::array<std::atomic<int>, 3> statuses{};
  std::mutex mutex;
  std::map<std::string, int> hosts;
  std::set<int> client_ports; ///< the gateway's side of each connection that brought a call

  three_instances() {
    for (int i = 0; i < 3; ++i) {
      statuses[i] = 200;
      auto s = std::make_unique<test_server>();
      s->get(R"(/p/(\d+))", [this, i](const httplib::Request& req, httplib::Response& res) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          ++hosts[req.get_header_value("Host")];
          client_ports.insert(req.remote_port);
        }
        res.status = statuses[i].load();
        res.set_content(json{{"who", i + 2}}.dump(), "application/json");
      });
      s->raw().set_keep_alive_max_count(100000); // one connection carries every call (the reload test)
      s->start_on("127.0.0." + std::to_string(i + 2));
      servers.push_back(std::move(s));
    }
  }
  json endpoints(std::vector<int> weights = {1, 1, 1}) const {
    json out = json::array();
    for (std::size_t i = 0; i < servers.size(); ++i)
      out.push_back({{"address", servers[i]->address()}, {"weight", weights[i]}});
    return out;
  }
  std::vector<int> calls() const {
    std::vector<int> out;
    for (const auto& s : servers)
      out.push_back(s->calls());
    return out;
  }
};

json upstream_gateway_config(json upstream, json section_extra = json::object(), std::string scheme = "http") {
  json section = gather::test::section("s", scheme + "://prices/p/{id}", 2000, std::move(section_extra));
  if (!section.contains("required"))
    section["required"] = true;
  return gather::test::route_config_json("/p/{id}", json::array({section}), 5000,
                                         {{"upstreams", {{"prices", std::move(upstream)}}}, {"io_threads", 2}});
}

/// Established TCP connections of this process's machine to `ip`:`port` (/proc/net/tcp: the
/// gateway's side of its connections to one instance).
int connections_to(const std::string& ip, int port) {
  unsigned a, b, c, d;
  std::sscanf(ip.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d);
  char remote[32];
  std::snprintf(remote, sizeof remote, "%02X%02X%02X%02X:%04X", d, c, b, a, static_cast<unsigned>(port));
  std::ifstream in("/proc/net/tcp");
  std::string line;
  int n = 0;
  std::getline(in, line); // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, rem, state;
    fields >> slot >> local >> rem >> state;
    if (rem == remote && state == "01")
      ++n;
  }
  return n;
}

int requests(const running_gateway& gw, int n) { return gather::test::answered_ok(gw, "/p/", n); }

} // namespace

TEST_CASE("upstreams: least_request and round_robin spread calls over three instances", "[upstreams]") {
  for (const auto* balance : {"least_request", "round_robin"}) {
    three_instances up;
    running_gateway gw(upstream_gateway_config({{"endpoints", up.endpoints()}, {"balance", balance}}));
    REQUIRE(requests(gw, 300) == 300);
    const auto calls = up.calls();
    INFO(balance << ": " << calls[0] << " " << calls[1] << " " << calls[2]);
    for (int n : calls)
      CHECK((n >= 60 && n <= 140)); // 100 each, within the random draws' tolerance
    if (std::string(balance) == "round_robin")
      for (int n : calls)
        CHECK(n == 100); // one request at a time: the turn goes round exactly
    CHECK(up.hosts.size() == 1);
    CHECK(up.hosts.count("prices") == 1); // the upstream's name is the Host
  }
}

TEST_CASE("upstreams: weights share the calls", "[upstreams]") {
  three_instances up;
  running_gateway gw(upstream_gateway_config({{"endpoints", up.endpoints({1, 1, 3})}, {"balance", "round_robin"}}));
  REQUIRE(requests(gw, 500) == 500);
  CHECK(up.calls() == std::vector<int>{100, 100, 300});
}

TEST_CASE("upstreams: an instance answering 503 is ejected, and back after eject_ms", "[upstreams]") {
  three_instances up;
  up.statuses[1] = 503;
  // eject_ms is long beside the 90 requests made while the instance answers 503 (under ASan at
  // -O0 they take ~0.7 s): ejected once, it must not come back and be ejected again before then.
  running_gateway gw(upstream_gateway_config(
      {{"endpoints", up.endpoints()}, {"outlier", {{"consecutive_failures", 2}, {"eject_ms", 2000}}}},
      {{"retry", {{"attempts", 2}}}}));
  // Each 503 is retried on another instance: every request ends 200.
  CHECK(requests(gw, 60) == 60);
  const auto sick = up.servers[1]->calls();
  CHECK(sick <= 4); // two failures in a row, then no call while ejected
  CHECK(requests(gw, 30) == 30);
  CHECK(up.servers[1]->calls() == sick);
  up.statuses[1] = 200;
  const auto back = gather::test::eventually([&] {
    requests(gw, 10);
    return up.servers[1]->calls() > sick;
  }, 8s);
  CHECK(back);
  auto metrics = gw.client().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Matchers::Contains("gather_upstream_ejections_total{upstream=\"prices\"} 1"));
}

TEST_CASE("upstreams: a stopped instance is ejected and its calls go to the others", "[upstreams]") {
  three_instances up;
  running_gateway gw(upstream_gateway_config(
      {{"endpoints", up.endpoints()}, {"outlier", {{"consecutive_failures", 1}, {"eject_ms", 60000}}}},
      {{"retry", {{"attempts", 2}}}}));
  REQUIRE(requests(gw, 30) == 30);
  const auto stopped = up.servers[2]->address();
  up.servers[2].reset(); // stopped: its port refuses connections
  CHECK(requests(gw, 100) == 100); // the one refused call is retried elsewhere
  auto debug = gw.client().Get("/debug/upstreams");
  REQUIRE(debug);
  REQUIRE(debug->status == 200);
  const auto view = json::parse(debug->body);
  const auto& endpoints = view.at("upstreams").at("prices").at("endpoints");
  REQUIRE(endpoints.size() == 3);
  int ejected = 0;
  for (const auto& e : endpoints)
    if (e.at("state") == "ejected") {
      ++ejected;
      CHECK(e.at("address") == stopped);
      CHECK(e.at("ejected_until_ms").get<long long>() > 0);
    }
  CHECK(ejected == 1);
}

TEST_CASE("upstreams: a retry lands on another endpoint", "[upstreams]") {
  three_instances up;
  for (auto& s : up.statuses)
    s = 503;
  running_gateway gw(upstream_gateway_config(
      {{"endpoints", up.endpoints()}, {"outlier", {{"consecutive_failures", 1000}}}},
      {{"retry", {{"attempts", 3}}}, {"fallback", json::object()}, {"required", false}}));
  for (int i = 0; i < 10; ++i) {
    auto res = gw.get("/p/1");
    REQUIRE(res);
    CHECK(json::parse(res->body).at("sections").at("s").at("attempts") == 3);
  }
  // Three attempts of each request, each on an instance of its own.
  CHECK(up.calls() == std::vector<int>{10, 10, 10});
}

TEST_CASE("upstreams: a source that needs a lookup ends its calls error at once", "[upstreams]") {
  running_gateway gw(upstream_gateway_config({{"dns", "prices.invalid:80"}}, {{"fallback", json::object()}, {"required", false}}));
  const auto started = std::chrono::steady_clock::now();
  auto res = gw.get("/p/1");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body).at("sections").at("s").at("status") == "error");
  CHECK(gather::test::ms_since(started) < 1000);
}

TEST_CASE("upstreams: a gRPC upstream's calls reach every instance over HTTP/2", "[upstreams][grpc-section]") {
  std::vector<std::unique_ptr<gather::test::grpc_library>> servers;
  json endpoints = json::array();
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<gather::test::grpc_library>());
    const auto target = servers.back()->target(); // http://127.0.0.1:PORT
    endpoints.push_back(target.substr(7));
  }
  json meta = {{"name", "meta"}, {"required", true}, {"timeout_ms", 2000},
               {"grpc", {{"target", "http://library"}, {"method", "linkd.v3.Library/GetBook"},
                         {"message", {{"isbn", "{isbn}"}}}}}};
  auto cfg = gather::test::route_config_json("/books/{isbn}", json::array({meta}), 5000,
                                             {{"upstreams", {{"library", {{"endpoints", endpoints}, {"balance", "round_robin"}}}}}});
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  running_gateway gw(cfg);
  for (int i = 0; i < 30; ++i) {
    auto r = gw.get("/books/978-" + std::to_string(i));
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  // Round robin, one call at a time: ten calls on each instance, every one an HTTP/2 stream.
  for (auto& server : servers)
    for (int i = 0; i < 10; ++i)
      CHECK(server->event("\"GetBook\"")["method"] == "GetBook");
  auto debug = gw.client().Get("/debug/upstreams");
  REQUIRE(debug);
  const auto view = json::parse(debug->body); // held: a range-for over a part of a temporary dangles
  for (const auto& e : view["upstreams"]["library"]["endpoints"])
    CHECK(e["calls"]["ok"] == 10);
}

namespace {

/// A CA, a server certificate it signed for DNS:prices.internal and a client certificate it
/// signed, made with the openssl command in a directory of the test's own.
struct upstream_pki {
  std::string dir;
  upstream_pki() {
    dir = (std::filesystem::temp_directory_path() / ("gather-upstream-tls-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    const std::string d = dir + "/";
    const std::string quiet = " >/dev/null 2>&1";
    const std::string script =
        "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=test-ca" + quiet +
        " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=prices.internal" + quiet +
        " && printf 'subjectAltName=DNS:prices.internal' > server.ext" +
        " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile server.ext" + quiet +
        " && openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=gateway" + quiet +
        " && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1" + quiet;
    REQUIRE(std::system(script.c_str()) == 0);
  }
  ~upstream_pki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string file(const char* name) const { return dir + "/" + name; }
};

/// An HTTPS instance on 127.0.0.2 that demands a client certificate the CA signed.
struct mutual_tls_server {
  httplib::SSLServer server;
  std::thread thread;
  int port = 0;
  explicit mutual_tls_server(const upstream_pki& pki)
    : server(pki.file("server.pem").c_str(), pki.file("server.key").c_str(), pki.file("ca.pem").c_str()) {
    REQUIRE(server.is_valid());
    server.Get(".*", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(json{{"host", req.get_header_value("Host")}}.dump(), "application/json");
    });
    port = server.bind_to_any_port("127.0.0.2");
    thread = std::thread([this] { server.listen_after_bind(); });
    REQUIRE(gather::test::eventually([this] { return server.is_running(); }));
  }
  ~mutual_tls_server() {
    server.stop();
    thread.join();
  }
};

} // namespace

TEST_CASE("upstreams: TLS with the upstream's CA, its server name and a client certificate", "[upstreams]") {
  upstream_pki pki;
  mutual_tls_server server(pki);
  json tls = {{"ca_file", pki.file("ca.pem")}, {"cert_file", pki.file("client.pem")},
              {"key_file", pki.file("client.key")}, {"server_name", "prices.internal"}};
  const json endpoints = json::array({"127.0.0.2:" + std::to_string(server.port)});
  for (const bool http2 : {false, true}) { // HTTP/2's ALPN finds no h2: the call goes over HTTP/1.1
    running_gateway gw(upstream_gateway_config({{"endpoints", endpoints}, {"tls", tls}}, {{"http2", http2}}, "https"));
    auto res = gw.get("/p/1");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(json::parse(res->body)["data"]["s"]["host"] == "prices.internal"); // the authority under TLS
  }
  // Each of these fails the handshake or the check: the section ends error (its fallback shows).
  const auto fails = [&](json changed) {
    running_gateway gw(upstream_gateway_config({{"endpoints", endpoints}, {"tls", std::move(changed)}},
                                               {{"fallback", json::object()}, {"required", false}}, "https"));
    auto res = gw.get("/p/1");
    REQUIRE(res);
    CHECK(json::parse(res->body)["sections"]["s"]["status"] == "error");
  };
  auto without_certificate = tls; // the server demands a client certificate
  without_certificate.erase("cert_file");
  without_certificate.erase("key_file");
  fails(without_certificate);
  auto other_name = tls; // a server name the certificate does not carry
  other_name["server_name"] = "other.internal";
  fails(other_name);
  auto without_ca = tls; // the system's CAs do not know the test's CA
  without_ca.erase("ca_file");
  fails(without_ca);
}

TEST_CASE("upstreams: a reload keeps an upstream's state and its connections", "[upstreams]") {
  three_instances up;
  up.statuses[2] = 503;
  auto cfg = upstream_gateway_config(
      {{"endpoints", up.endpoints()}, {"balance", "round_robin"}, {"outlier", {{"consecutive_failures", 1}, {"eject_ms", 60000}}}},
      {{"retry", {{"attempts", 2}}}});
  cfg["io_threads"] = 1; // one loop: one pool per endpoint
  running_gateway gw(cfg);
  REQUIRE(requests(gw, 30) == 30);
  const auto ports_before = up.client_ports;
  cfg["upstreams"]["prices"]["outlier"]["consecutive_failures"] = 2; // a change that keeps the endpoints
  REQUIRE(gw.gw().reload(gather::load_config(cfg.dump()), "test"));
  REQUIRE(requests(gw, 30) == 30);
  CHECK(up.client_ports == ports_before); // the same connections carried the calls after the reload
  const auto view = json::parse(gw.client().Get("/debug/upstreams")->body)["upstreams"]["prices"];
  CHECK(view["ejections"] == 1); // the ejection before the reload still holds
  CHECK(view["endpoints"][2]["state"] == "ejected");
  CHECK(view["endpoints"][0]["calls"]["ok"].get<int>() >= 25);
  // A reload without the third instance: it leaves; calls go to the two that stay, and its idle
  // connection closes at the loop's next call.
  const auto third_port = up.servers[2]->port();
  CHECK(connections_to("127.0.0.4", third_port) == 1);
  cfg["upstreams"]["prices"]["endpoints"].erase(2);
  REQUIRE(gw.gw().reload(gather::load_config(cfg.dump()), "test"));
  const auto sick = up.servers[2]->calls();
  REQUIRE(requests(gw, 20) == 20);
  CHECK(up.servers[2]->calls() == sick);
  CHECK(gather::test::eventually([&] { return connections_to("127.0.0.4", third_port) == 0; }));
  CHECK(json::parse(gw.client().Get("/debug/upstreams")->body)["upstreams"]["prices"]["endpoints"].size() == 2);
}

TEST_CASE("upstreams: a batch call's retry lands on another endpoint", "[upstreams][batch]") {
  // One instance of three answers 503 to every call and is never ejected: each batch call that
  // picks it first must take its second attempt elsewhere. (Picking afresh, least_request's two
  // random draws would send about a third of those retries back to it, and those items fail.)
  three_instances up;
  up.statuses[0] = 503;
  json batch = {{"url", "http://prices/p/{item}"}, {"timeout_ms", 2000}, {"deadline_ms", 5000},
                {"retry", {{"attempts", 2}}}};
  running_gateway gw(gather::test::batch_route_config_json(
      "/b", batch,
      {{"upstreams", {{"prices", {{"endpoints", up.endpoints()},
                                  {"outlier", {{"consecutive_failures", 1000}}}}}}}}));
  json items = json::array();
  for (int i = 0; i < 60; ++i)
    items.push_back(i);
  auto res = gw.post("/b", json{{"items", items}}.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const auto body = json::parse(res->body);
  int ok = 0;
  for (const auto& row : body.at("results"))
    ok += row.at("status") == "ok";
  CHECK(ok == 60);
  CHECK(up.servers[0]->calls() >= 5); // the failing instance was met, and its calls retried
}
