// Who may use a cluster node (docs/cluster.md, "Trust"): --allow, mutual TLS with certificates
// this test makes with the openssl command line (the commands docs/cluster.md gives), and links
// that cost no thread and delay nothing when a node's address black-holes SYNs. Real processes,
// real sockets, loopback only.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/child_process.hpp"
#include "support/node_child.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {



json trusted_route_config(const std::string& path, const std::string& url, json cluster, json extra = json::object()) {
  json s = {{"name", "s"}, {"url", url}, {"timeout_ms", 1000}, {"required", true}};
  for (auto& [k, v] : extra.items())
    s[k] = v;
  return {{"listen", "127.0.0.1:0"}, {"cluster", std::move(cluster)},
          {"routes", {{{"path", path}, {"deadline_ms", 3000}, {"sections", {s}}}}}};
}

bool node_up(running_gateway& gw) {
  const auto health = json::parse(gw.get("/healthz")->body);
  return !health["nodes"].empty() && health["nodes"][0]["up"] == true;
}

std::uint64_t node_work(running_gateway& gw) {
  return json::parse(gw.get("/debug/actors")->body)["nodes"][0]["work"].get<std::uint64_t>();
}

/// A CA, certificates it signed, and a second CA with one of its own: made with `openssl` as
/// docs/cluster.md says, in a fresh directory.
struct pki {
  std::string dir;
  pki() {
    dir = temp_file("", "");
    std::filesystem::remove(dir);
    std::filesystem::create_directories(dir);
    const std::string script = R"(set -e; cd ')" + dir + R"('
make_ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
              -subj "/CN=$1" -keyout "$1.key" -out "$1.pem"; }
make_cert() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
                -keyout "$1.key" -out "$1.csr"
              openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 365 \
                -out "$1.pem"; }
make_ca cluster-ca; make_cert node cluster-ca; make_cert gateway cluster-ca
make_ca other-ca; make_cert rogue other-ca
)";
    const auto done = run("/bin/sh", {"-c", script});
    INFO(done.err);
    REQUIRE(done.code == 0);
  }
  std::string operator()(const std::string& file) const { return dir + "/" + file; }
  json tls(const std::string& who, const std::string& ca) const {
    return {{"cert_file", (*this)(who + ".pem")}, {"key_file", (*this)(who + ".key")},
            {"ca_file", (*this)(ca + ".pem")}};
  }
  std::vector<std::string> node_flags() const {
    return {"--tls-cert", (*this)("node.pem"), "--tls-key", (*this)("node.key"), "--tls-ca",
            (*this)("cluster-ca.pem")};
  }
};

} // namespace

TEST_CASE("cluster trust: a node started with neither --allow nor --allow-any exits 2 saying why",
          "[cluster][trust]") {
  const auto none = run(binary, {"node", "--listen", "127.0.0.1:0"});
  CHECK(none.code == 2);
  CHECK(none.err.find("--allow") != std::string::npos);
  CHECK(none.err.find("open relay") != std::string::npos);
  const auto bad = run(binary, {"node", "--listen", "127.0.0.1:0", "--allow", "http://10.0.0.7:9001/path"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("must be scheme://host:port") != std::string::npos);
  // Without TLS only loopback: any other address needs --insecure (checked before binding).
  const auto exposed = run(binary, {"node", "--listen", "0.0.0.0:0", "--allow-any"});
  CHECK(exposed.code == 2);
  CHECK(exposed.err.find("without TLS") != std::string::npos);
  CHECK(exposed.err.find("--insecure") != std::string::npos);
  const auto half_tls = run(binary, {"node", "--listen", "127.0.0.1:0", "--allow-any", "--tls-cert", "/x"});
  CHECK(half_tls.code == 2);
  CHECK(half_tls.err.find("give all three or none") != std::string::npos);
}

TEST_CASE("cluster trust: work for an origin the node was not given ends error, no call made, "
          "also for its retries", "[cluster][trust]") {
  test_server allowed, forbidden;
  for (auto* server : {&allowed, &forbidden})
    server->get("/x", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", true}}); });
  allowed.start();
  forbidden.start();
  node_child node{{"--allow", allowed.base_url()}};
  auto cluster = json{{"nodes", {node.address()}}, {"local", false}};
  running_gateway ok_gw{trusted_route_config("/r", allowed.base_url() + "/x", cluster)};
  REQUIRE(eventually([&] { return node_up(ok_gw); }, milliseconds{10000}));
  auto fine = ok_gw.get("/r");
  REQUIRE(fine);
  CHECK(fine->status == 200);
  CHECK(allowed.calls() == 1);

  running_gateway bad_gw{trusted_route_config("/r", forbidden.base_url() + "/x", cluster,
                                   {{"retry", {{"attempts", 3}, {"backoff_ms", 10}}}})};
  REQUIRE(eventually([&] { return node_up(bad_gw); }, milliseconds{10000}));
  const auto started = std::chrono::steady_clock::now();
  auto refused = bad_gw.get("/r");
  REQUIRE(refused);
  CHECK(ms_since(started) < 1000); // at once, not at a timeout
  const auto body = json::parse(refused->body);
  CHECK(refused->status == 503); // the required section failed
  CHECK(body["section"] == "s");
  CHECK(node_work(bad_gw) >= 1); // it did go to the node, which refused it
  CHECK(forbidden.calls() == 0);
  CHECK(node.child.wait_for_stderr(R"("event":"origin_refused")"));
  CHECK(node.child.wait_for_stderr(R"("origin":")" + forbidden.base_url() + "\""));
}

TEST_CASE("cluster trust: mutual TLS, a peer of another CA or plain TCP is refused and logged "
          "while the good gateway keeps working", "[cluster][trust][tls]") {
  pki certs;
  test_server down;
  down.get("/x", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", true}}); });
  down.start();
  auto flags = certs.node_flags();
  flags.insert(flags.end(), {"--allow", down.base_url()});
  node_child node{flags};
  running_gateway good{trusted_route_config("/r", down.base_url() + "/x",
                                 {{"nodes", {node.address()}}, {"local", false},
                                  {"tls", certs.tls("gateway", "cluster-ca")}})};
  REQUIRE(eventually([&] { return node_up(good); }, milliseconds{10000}));
  REQUIRE(good.get("/r")->status == 200);
  CHECK(node_work(good) == 1);

  // A gateway whose certificate another CA signed (it trusts the right CA: the node refuses it).
  json rogue_cfg = trusted_route_config("/r", down.base_url() + "/x",
                             {{"nodes", {node.address()}}, {"local", false},
                              {"tls", certs.tls("rogue", "cluster-ca")}});
  child_process rogue{binary, {"serve", "--config", temp_file(rogue_cfg.dump())}};
  REQUIRE(rogue.wait_for_line("listening on"));
  CHECK(node.child.wait_for_stderr("certificate verify failed"));
  CHECK(rogue.wait_for_stderr("TLS handshake failed"));
  // A gateway speaking plain BASP.
  json plain_cfg = trusted_route_config("/r", down.base_url() + "/x", {{"nodes", {node.address()}}, {"local", false}});
  child_process plain{binary, {"serve", "--config", temp_file(plain_cfg.dump())}};
  REQUIRE(plain.wait_for_line("listening on"));
  CHECK(node.child.wait_for_stderr("wrong version number"));
  CHECK(node.child.wait_for_stderr(R"("event":"cluster_peer_refused")"));
  // Neither ever got the node; the good gateway still runs its work there.
  for (auto* refused : {&rogue, &plain}) {
    refused->signal(SIGTERM);
    CHECK(refused->wait_exit() == 0);
    CHECK(refused->err().find(R"("event":"node_up")") == std::string::npos);
  }
  for (int i = 0; i < 3; ++i)
    CHECK(good.get("/r")->status == 200);
  CHECK(node_work(good) == 4);
  CHECK(down.calls() == 4);
}

TEST_CASE("cluster trust: gather check reports cluster.tls files by JSON path", "[cluster][trust][tls]") {
  pki certs;
  auto checked_with = [&](const std::string& key, const std::string& ca) {
    json cfg = trusted_route_config("/r", "http://127.0.0.1:9/x",
                         {{"nodes", {"127.0.0.1:4242"}},
                          {"tls", {{"cert_file", certs("node.pem")}, {"key_file", certs(key)},
                                   {"ca_file", certs(ca)}}}});
    return run(binary, {"check", "--config", temp_file(cfg.dump())});
  };
  const auto missing = checked_with("node.key", "missing.pem");
  CHECK(missing.code == 2);
  CHECK(missing.err.find("cluster.tls.ca_file: cannot read") != std::string::npos);
  const auto wrong_key = checked_with("gateway.key", "cluster-ca.pem");
  CHECK(wrong_key.code == 2);
  CHECK(wrong_key.err.find("cluster.tls.key_file: ") != std::string::npos);
  CHECK(checked_with("node.key", "cluster-ca.pem").code == 0);
}

namespace {

/// A loopback address whose SYNs are dropped: a listener that never accepts, with its accept queue
/// full (the kernel drops a SYN to a full queue). Checked: a further connect gets no answer.
struct syn_black_hole {
  int listener = -1;
  std::vector<int> fillers;
  int port = 0;
  syn_black_hole() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 0) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    // Fill the queue until a connect stays unanswered.
    for (int i = 0; i < 8; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers.push_back(fd);
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 300) == 0)
        return; // this SYN went unanswered: the hole is open
    }
    FAIL("the accept queue never filled: no SYN black hole on this kernel");
  }
  ~syn_black_hole() {
    for (int fd : fillers)
      ::close(fd);
    ::close(listener);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

} // namespace

TEST_CASE("cluster trust: nodes behind a SYN black hole cost no thread and delay neither the "
          "gateway's start nor any request", "[cluster][trust][blackhole]") {
  std::vector<std::unique_ptr<syn_black_hole>> holes;
  for (int i = 0; i < 6; ++i)
    holes.push_back(std::make_unique<syn_black_hole>());
  test_server down;
  down.get("/x", [](const httplib::Request&, httplib::Response& res) { answer_json(res, {{"ok", true}}); });
  down.start();
  node_child node{{"--allow", down.base_url()}};
  auto config_with = [&](std::size_t dead) {
    json nodes = json::array();
    for (std::size_t i = 0; i < dead; ++i)
      nodes.push_back(holes[i]->address());
    nodes.push_back(node.address());
    return trusted_route_config("/r", down.base_url() + "/x",
                     {{"nodes", nodes}, {"local", false}, {"connect_timeout_ms", 60000}});
  };
  // Threads of a gateway with one dead node, then with six: the links are no threads.
  const int before = thread_count();
  int with_one = 0;
  {
    running_gateway gw{config_with(1)};
    REQUIRE(eventually([&] { return json::parse(gw.get("/healthz")->body)["nodes"][1]["up"] == true; },
                       milliseconds{10000}));
    with_one = thread_count() - before;
  }
  const auto started = std::chrono::steady_clock::now();
  running_gateway gw{config_with(6)};
  CHECK(ms_since(started) < 2000); // the start waits for no connect
  // The live node comes up although six connects hang (each for up to its 60 s timeout).
  REQUIRE(eventually([&] { return json::parse(gw.get("/healthz")->body)["nodes"][6]["up"] == true; },
                     milliseconds{10000}));
  CHECK(thread_count() - before == with_one);
  for (int i = 0; i < 5; ++i) {
    const auto asked = std::chrono::steady_clock::now();
    auto r = gw.get("/r");
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(ms_since(asked) < 1000);
  }
  const auto health = json::parse(gw.get("/healthz")->body);
  for (int i = 0; i < 6; ++i)
    CHECK(health["nodes"][i]["up"] == false);
}

TEST_CASE("cluster trust: a connect that a SYN black hole swallows gives up after connect_timeout_ms "
          "and says so", "[cluster][trust][blackhole]") {
  syn_black_hole hole;
  json cfg = trusted_route_config("/r", "http://127.0.0.1:9/x",
                       {{"nodes", {hole.address()}}, {"connect_timeout_ms", 200}});
  child_process gw{binary, {"serve", "--config", temp_file(cfg.dump())}};
  REQUIRE(gw.wait_for_line("listening on"));
  CHECK(gw.wait_for_stderr("cannot connect: no answer within 200 ms"));
  gw.signal(SIGTERM);
  const auto stopping = std::chrono::steady_clock::now();
  CHECK(gw.wait_exit() == 0);
  CHECK(ms_since(stopping) < 3000); // no connect holds the shutdown
}

TEST_CASE("cluster trust: cluster.tls and connect_timeout_ms are checked by JSON path", "[cluster][trust][config]") {
  const auto problems_of = [](json cluster) {
    json cfg = trusted_route_config("/r", "http://127.0.0.1:9/x", std::move(cluster));
    return gather::load_config(cfg.dump()).problems;
  };
  auto has = [](const std::vector<std::string>& problems, const std::string& text) {
    for (const auto& p : problems)
      if (p.find(text) == 0)
        return true;
    return false;
  };
  CHECK(has(problems_of({{"nodes", json::array()}, {"tls", {{"cert_file", "a"}, {"key_file", "b"}}}}),
            "cluster.tls.ca_file: is required"));
  CHECK(has(problems_of({{"nodes", json::array()}, {"tls", {{"cert_file", ""}, {"key_file", "b"}, {"ca_file", "c"}}}}),
            "cluster.tls.cert_file: must be a non-empty file name"));
  CHECK(has(problems_of({{"nodes", json::array()}, {"tls", {{"cert_file", "a"}, {"key_file", "b"}, {"ca_file", "c"}, {"x", 1}}}}),
            "cluster.tls.x: "));
  CHECK(has(problems_of({{"nodes", json::array()}, {"connect_timeout_ms", 0}}), "cluster.connect_timeout_ms: "));
  CHECK(problems_of({{"nodes", json::array()}, {"connect_timeout_ms", 500}}).empty());
}
