// `auth` and `rate_limit` as `gather check` reads them: defaults, values, and one problem per
// mistake under its JSON path.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gather/admission/auth_check.hpp"
#include "gather/config/config.hpp"

#include <cstdio>
#include <unistd.h>

using gather::load_config;
using gather::rate_limit_config;
using json = nlohmann::json;

namespace {

json route_with(json extra, std::string url = "http://127.0.0.1:9001/x") {
  json route = {{"path", "/p"},
                {"sections", {{{"name", "s"}, {"url", url}, {"timeout_ms", 300}, {"required", true}}}}};
  for (auto& [k, v] : extra.items())
    route[k] = v;
  return json{{"routes", {route}}};
}

const json jwt_file = {{"jwt", {{"jwks_file", "/etc/gather/jwks.json"}}}};

std::vector<std::string> auth_problems(const json& cfg) { return load_config(cfg.dump()).problems; }

bool has_auth_problem(const std::vector<std::string>& all, const std::string& text) {
  const bool found = std::any_of(all.begin(), all.end(), [&](const std::string& p) { return p == text; });
  if (!found)
    for (const auto& p : all)
      UNSCOPED_INFO(p);
  return found;
}

} // namespace

TEST_CASE("auth.jwt is read with its defaults", "[unit][config][auth]") {
  auto loaded = load_config(route_with({{"auth", jwt_file}}, "http://127.0.0.1:9001/u/{claim.sub}").dump());
  REQUIRE(loaded.value);
  const auto& route = loaded.value->routes[0];
  REQUIRE(route.auth);
  const auto& jwt = route.auth->jwt;
  CHECK(jwt.jwks_file == "/etc/gather/jwks.json");
  CHECK(jwt.jwks_url.empty());
  CHECK(jwt.leeway.count() == 60);
  CHECK(jwt.jwks_refresh.count() == 300);
  CHECK(!jwt.issuer);
  CHECK(!jwt.audience);
  CHECK(route.sections[0].url.parts[1].what == gather::url_part::kind::claim);
  CHECK(route.sections[0].url.parts[1].text == "sub");
  CHECK(!route.rate_limit);
}

TEST_CASE("auth.jwt with every key", "[unit][config][auth]") {
  auto loaded = load_config(
      route_with({{"auth",
                   {{"jwt",
                     {{"jwks_url", "https://127.0.0.1:8443/jwks.json"}, {"jwks_refresh_s", 60},
                      {"issuer", "https://id.example.com/"}, {"audience", "shop-web"}, {"leeway_s", 5},
                      {"require", {{"scope", "orders:read"}, {"tier", 3}}},
                      {"forward_claims", {{"sub", "X-User-Id"}}}}}}},
                  {"rate_limit", {{"per", "claim:sub"}, {"rate_per_s", 2.5}}}})
          .dump());
  REQUIRE(loaded.value);
  const auto& route = loaded.value->routes[0];
  const auto& jwt = route.auth->jwt;
  CHECK(jwt.jwks_url == "https://127.0.0.1:8443/jwks.json");
  CHECK(jwt.jwks_refresh.count() == 60);
  CHECK(jwt.issuer == "https://id.example.com/");
  CHECK(jwt.audience == "shop-web");
  CHECK(jwt.leeway.count() == 5);
  CHECK(jwt.require == std::vector<std::pair<std::string, std::string>>{{"scope", "orders:read"}, {"tier", "3"}});
  CHECK(jwt.forward_claims == std::vector<std::pair<std::string, std::string>>{{"sub", "X-User-Id"}});
  REQUIRE(route.rate_limit);
  CHECK(route.rate_limit->per == rate_limit_config::key_kind::claim);
  CHECK(route.rate_limit->name == "sub");
  CHECK(route.rate_limit->rate_per_s == Approx(2.5));
  CHECK(route.rate_limit->burst == Approx(3)); // ceil(rate)
  CHECK(route.rate_limit->max_keys == 100000);
}

TEST_CASE("rate_limit is read", "[unit][config][ratelimit]") {
  auto loaded = load_config(
      route_with({{"rate_limit", {{"per", "header:X-Api-Key"}, {"rate_per_s", 100}, {"burst", 20}, {"max_keys", 1000}}}})
          .dump());
  REQUIRE(loaded.value);
  const auto& limit = *loaded.value->routes[0].rate_limit;
  CHECK(limit.per == rate_limit_config::key_kind::header);
  CHECK(limit.name == "x-api-key");
  CHECK(limit.burst == Approx(20));
  CHECK(limit.max_keys == 1000);
  for (const char* per : {"ip", "route"})
    CHECK(load_config(route_with({{"rate_limit", {{"per", per}, {"rate_per_s", 1}}}}).dump()).value);
}

TEST_CASE("auth and rate_limit mistakes are reported by JSON path", "[unit][config][auth][ratelimit]") {
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", json::object()}}}})),
            "routes[0].auth.jwt: needs \"jwks_file\" or \"jwks_url\""));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"jwks_url", "http://h/j"}}}}}})),
            "routes[0].auth.jwt: has both \"jwks_file\" and \"jwks_url\" (one or the other)"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_url", "ftp://h/j"}}}}}})),
            "routes[0].auth.jwt.jwks_url: must start with http:// or https://"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"jwks_refresh_s", 60}}}}}})),
            "routes[0].auth.jwt.jwks_refresh_s: only with \"jwks_url\" (a jwks_file is read at start and on reload)"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"leeway_s", -1}}}}}})),
            "routes[0].auth.jwt.leeway_s: must be an integer from 0 to 3600"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"hs256_secret", "x"}}}}}})),
            "routes[0].auth.jwt.hs256_secret: unknown key"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"require", {{"scope", json::array()}}}}}}}})),
            "routes[0].auth.jwt.require.scope: must be a non-empty string, an integer or a boolean"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"forward_claims", {{"sub", "Host"}}}}}}}})),
            "routes[0].auth.jwt.forward_claims.sub: \"host\" is a header the gateway sets or never forwards"));
  CHECK(has_auth_problem(auth_problems(route_with({{"auth", {{"jwt", {{"jwks_file", "/a"}, {"forward_claims", {{"sub", "x y"}}}}}}}})),
            "routes[0].auth.jwt.forward_claims.sub: must be a header name (letters, digits and !#$%&'*+-.^_`|~)"));
  CHECK(has_auth_problem(auth_problems(route_with({}, "http://127.0.0.1:9001/u/{claim.sub}")),
            "routes[0].sections[0].url: {claim.sub}: {claim.NAME} needs \"auth\" on the route (no token, no claims)"));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "claim:sub"}, {"rate_per_s", 1}}}})),
            "routes[0].rate_limit.per: claim: needs \"auth\" on the route (no token, no claims)"));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "cookie"}, {"rate_per_s", 1}}}})),
            "routes[0].rate_limit.per: must be \"ip\", \"route\", \"header:NAME\" or \"claim:NAME\""));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "ip"}, {"rate_per_s", 0}}}})),
            "routes[0].rate_limit.rate_per_s: must be a number above 0 and at most 1000000"));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "ip"}}}})),
            "routes[0].rate_limit.rate_per_s: is required (a number above 0 and at most 1000000)"));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "ip"}, {"rate_per_s", 1}, {"burst", 0}}}})),
            "routes[0].rate_limit.burst: must be an integer from 1 to 1000000"));
  CHECK(has_auth_problem(auth_problems(route_with({{"rate_limit", {{"per", "ip"}, {"rate_per_s", 1}, {"max_keys", 0}}}})),
            "routes[0].rate_limit.max_keys: must be an integer from 1 to 10000000"));
}

TEST_CASE("gather check reads a jwks_file: unreadable, no usable key, a malformed key", "[unit][config][auth]") {
  const auto check = [](const std::string& file) {
    auto loaded = load_config(route_with({{"auth", {{"jwt", {{"jwks_file", file}}}}}}).dump());
    REQUIRE(loaded.value);
    return gather::auth_problems(*loaded.value);
  };
  const auto write = [](const std::string& text) {
    char name[] = "/tmp/gather-check-jwks-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    return std::string(name);
  };
  const auto missing = check("/nonexistent/jwks.json");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0] == "routes[0].auth.jwt.jwks_file: cannot read \"/nonexistent/jwks.json\": No such file or directory");

  const auto secrets = write(R"({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})");
  const auto only_secrets = check(secrets);
  REQUIRE(only_secrets.size() == 1);
  CHECK(only_secrets[0] == "routes[0].auth.jwt.jwks_file: \"" + secrets +
                               "\" has no usable key (keys[0]: kty \"oct\" (a shared secret) is never used: "
                               "the gateway holds no secrets)");
  const auto bad = write(R"({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}]})");
  const auto malformed = check(bad);
  REQUIRE(malformed.size() == 1);
  CHECK(malformed[0] == "routes[0].auth.jwt.jwks_file: \"" + bad + "\" keys[0]: \"x\" must be 32 bytes");
  const auto text = write("not json");
  CHECK(check(text) == std::vector<std::string>{"routes[0].auth.jwt.jwks_file: \"" + text + "\" is not JSON"});
  for (const auto& f : {secrets, bad, text})
    std::remove(f.c_str());
}
