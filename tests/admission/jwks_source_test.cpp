// Where keys come from: a file read once, a URL fetched through the gateway's own downstream client
// (a real loopback server), refetched on an unknown kid at most once per 10 s, the last good set
// kept when the URL fails; and the route guard on top (missing, unavailable, cached verifications).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <unistd.h>

#include "gather/admission/jwt_guard.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"
#include "support/child_process.hpp"
#include "support/test_server.hpp"
#include "support/token_maker.hpp"

using namespace gather;
using gather::test::temp_file;
using gather::test::claims_now;
using gather::test::key_kind;
using gather::test::signing_key;
using json = nlohmann::json;

namespace {

const signing_key& key_a() { static const signing_key k{key_kind::ec_p256, "a"}; return k; }
const signing_key& key_b() { static const signing_key k{key_kind::ed25519, "b"}; return k; }

/// A JWKS endpoint whose set (and status) the test changes.
struct jwks_server {
  std::mutex mutex;
  json set;
  int status = 200;
  gather::test::test_server server;
  jwks_server() {
    server.get("/jwks", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      res.status = status;
      res.set_content(set.dump(), "application/json");
    });
    server.start();
  }
  void serve(json s, int st = 200) {
    std::lock_guard<std::mutex> lock(mutex);
    set = std::move(s);
    status = st;
  }
  std::string url() const { return server.base_url() + "/jwks"; }
};

/// One loop and a client on it, as the gateway has.
struct loop_and_client {
  io_loops loops{1};
  downstream_client client{loops};
  loop_and_client() { loops.start(); }
  ~loop_and_client() { loops.stop(); }
};

} // namespace

TEST_CASE("a jwks_file source and the guard on it", "[auth][jwks]") {
  const auto file = temp_file(gather::test::jwk_set_of({&key_a()}).dump());
  jwt_config cfg;
  cfg.jwks_file = file;
  jwt_guard guard{cfg, std::make_shared<jwks_source>(file)};
  std::remove(file.c_str());
  CHECK(guard.check("", test::now_s()).failure == jwt_failure::missing);
  const auto token = key_a().sign(claims_now({{"sub", "carol"}}), "ES256");
  for (int round = 0; round < 2; ++round) { // the second is answered from the thread's cache
    const auto outcome = guard.check("Bearer " + token, test::now_s());
    CHECK(outcome.failure == jwt_failure::none);
    REQUIRE(outcome.claims);
    CHECK((*outcome.claims)["sub"] == "carol");
  }
  // A cached token still has its time checked.
  CHECK(guard.check("Bearer " + token, test::now_s() + 7200).failure == jwt_failure::exp);
  CHECK(guard.check("Bearer " + key_b().sign(claims_now(), "EdDSA"), test::now_s()).failure ==
        jwt_failure::kid);

  SECTION("a file without a usable key leaves the route unavailable") {
    const auto secrets = temp_file(R"({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})");
    jwt_guard none{cfg, std::make_shared<jwks_source>(secrets)};
    std::remove(secrets.c_str());
    CHECK(none.check("Bearer " + token, test::now_s()).unavailable);
    CHECK(none.check("", test::now_s()).failure == jwt_failure::missing);
  }
}

TEST_CASE("a jwks_url source: fetched at start, rotated on an unknown kid, last good set kept", "[auth][jwks]") {
  jwks_server idp;
  idp.serve(gather::test::jwk_set_of({&key_a()}));
  // The source outlives the client (as in the gateway): no completion can reach a dead source.
  jwks_source source{idp.url(), std::chrono::seconds{300}};
  loop_and_client net;
  {
    jwt_config cfg;
    cfg.jwks_url = idp.url();
    jwt_guard guard{cfg, std::shared_ptr<jwks_source>(&source, [](jwks_source*) {})};
    CHECK(guard.check("Bearer x.y.z", test::now_s()).unavailable); // not started: no set yet
    source.start(net.client);
    REQUIRE(gather::test::eventually([&] { return source.version() > 0; }));
    const auto token_a = key_a().sign(claims_now(), "ES256");
    CHECK(guard.check("Bearer " + token_a, test::now_s()).failure == jwt_failure::none);

    // The identity provider rotates to b: a token naming b triggers one refetch.
    idp.serve(gather::test::jwk_set_of({&key_b()}));
    const auto token_b = key_b().sign(claims_now(), "EdDSA");
    const auto fetches = source.fetches();
    CHECK(guard.check("Bearer " + token_b, test::now_s()).failure == jwt_failure::kid);
    REQUIRE(gather::test::eventually([&] { return source.version() > 1; }));
    CHECK(guard.check("Bearer " + token_b, test::now_s()).failure == jwt_failure::none);
    CHECK(guard.check("Bearer " + token_a, test::now_s()).failure == jwt_failure::kid);
    CHECK(source.fetches() == fetches + 1);
    // Within 10 s, unknown kids fetch nothing more, however many arrive.
    for (int i = 0; i < 50; ++i)
      guard.check("Bearer " + token_a, test::now_s());
    CHECK(source.fetches() == fetches + 1);

  }
  // A failing endpoint keeps the last good set: a source refreshing at every check.
  jwks_source eager{idp.url(), std::chrono::seconds{0}};
  loop_and_client net2;
  eager.start(net2.client);
  REQUIRE(gather::test::eventually([&] { return eager.version() == 1; }));
  idp.serve(json{{"error", "down"}}, 500);
  const auto before = eager.fetches();
  // A fetch starts only when none is in flight: two more mean the first failing one has ended.
  REQUIRE(gather::test::eventually([&] {
    eager.refresh_if_due();
    return eager.fetches() >= before + 2;
  }));
  CHECK(eager.version() == 1);
  REQUIRE(eager.keys());
  CHECK(eager.keys()->keys.size() == 1);
}

TEST_CASE("a jwks_url that never answered leaves the route unavailable", "[auth][jwks]") {
  int port = 0;
  const int fd = gather::test::listen_on_loopback(16, port);
  ::close(fd); // nothing listens there now: connection refused
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/jwks";
  jwks_source source{url, std::chrono::seconds{300}};
  loop_and_client net;
  source.start(net.client);
  REQUIRE(gather::test::eventually([&] { return source.fetches() == 1; }));
  jwt_config cfg;
  jwt_guard guard{cfg, std::shared_ptr<jwks_source>(&source, [](jwks_source*) {})};
  CHECK(guard.check("Bearer " + key_a().sign(claims_now(), "ES256"), test::now_s()).unavailable);
}
