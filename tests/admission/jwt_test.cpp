// The token check's parts with real keys made by the test (OpenSSL): base64url, JWK import, every
// algorithm accepted, every refusal the gateway makes, and the claim checks with their leeway.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "gather/admission/base64url.hpp"
#include "gather/admission/jwk_set.hpp"
#include "gather/admission/jwt.hpp"
#include "support/token_maker.hpp"

using namespace gather;
using gather::test::claims_now;
using gather::test::key_kind;
using gather::test::signing_key;
using json = nlohmann::json;

namespace {

// Made once per run: RSA generation takes a while on a loaded machine.
const signing_key& rsa_key() { static const signing_key k{key_kind::rsa, "rsa-1"}; return k; }
const signing_key& rsa_other() { static const signing_key k{key_kind::rsa, "rsa-2"}; return k; }
const signing_key& p256_key() { static const signing_key k{key_kind::ec_p256, "ec-256"}; return k; }
const signing_key& p384_key() { static const signing_key k{key_kind::ec_p384, "ec-384"}; return k; }
const signing_key& ed_key() { static const signing_key k{key_kind::ed25519, "ed-1"}; return k; }

jwk_set set_of(const json& jwks) {
  auto parsed = parse_jwk_set(jwks.dump());
  REQUIRE(parsed.value);
  INFO(jwks.dump());
  REQUIRE(parsed.invalid.empty());
  return *parsed.value;
}

jwk_set all_keys() {
  return set_of(gather::test::jwk_set_of({&rsa_key(), &p256_key(), &p384_key(), &ed_key()}));
}

jwt_failure verify(const std::string& token, const jwk_set& keys) {
  return verify_signature(token, keys).failure;
}

} // namespace

TEST_CASE("base64url decodes canonical unpadded text only", "[unit][auth][base64url]") {
  for (const std::string& bytes : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar",
                                  std::string("\xff\xfe\x00\x01", 4)}) {
    const auto text = base64url_encode(bytes);
    CHECK(text.find('=') == std::string::npos);
    CHECK(base64url_decode(text) == bytes);
  }
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK(base64url_decode("Zg==") == std::nullopt);   // padding
  CHECK(base64url_decode("Z+8") == std::nullopt);    // the standard alphabet's '+'
  CHECK(base64url_decode("Zm9v YmFy") == std::nullopt);
  CHECK(base64url_decode("Zh") == std::nullopt);     // non-zero trailing bits: a second spelling of "f"
  CHECK(base64url_decode("Zg") == std::string("f"));
  CHECK(base64url_decode("A") == std::nullopt);      // 6 bits: no byte
}

TEST_CASE("a JWK set imports RSA, EC P-256/P-384 and Ed25519 keys and skips secrets", "[unit][auth][jwks]") {
  json jwks = gather::test::jwk_set_of({&rsa_key(), &p256_key(), &p384_key(), &ed_key()});
  jwks["keys"].push_back({{"kty", "oct"}, {"k", "c2VjcmV0"}, {"kid", "hmac"}});
  jwks["keys"].push_back({{"kty", "EC"}, {"crv", "secp256k1"}, {"x", "AA"}, {"y", "AA"}});
  auto enc = rsa_other().jwk();
  enc["use"] = "enc";
  jwks["keys"].push_back(enc);
  const auto parsed = parse_jwk_set(jwks.dump());
  REQUIRE(parsed.value);
  CHECK(parsed.value->keys.size() == 4);
  CHECK(parsed.skipped.size() == 3);
  CHECK(parsed.invalid.empty());

  SECTION("malformed keys of a supported type are invalid, each named") {
    auto bad_point = p256_key().jwk();
    bad_point["y"] = bad_point["x"]; // (x, x) is not on the curve
    auto short_rsa = rsa_key().jwk();
    short_rsa["n"] = base64url_encode(std::string(128, '\x91')); // 1024 bits
    auto wrong_alg = ed_key().jwk("RS256");
    const auto result = parse_jwk_set(json{{"keys", {bad_point, short_rsa, wrong_alg, 7}}}.dump());
    REQUIRE(result.value);
    CHECK(result.value->keys.empty());
    REQUIRE(result.invalid.size() == 4);
    CHECK(result.invalid[0].rfind("keys[0]: ", 0) == 0);
    CHECK(result.invalid[1].find("1024 bits") != std::string::npos);
  }
  SECTION("text that is no set") {
    CHECK_FALSE(parse_jwk_set("[1").value);
    CHECK_FALSE(parse_jwk_set(R"({"keys": 3})").value);
    CHECK_FALSE(parse_jwk_set(R"([])").value);
  }
}

TEST_CASE("tokens of every supported algorithm verify", "[unit][auth][jwt]") {
  const auto keys = all_keys();
  for (const auto& alg : {"RS256", "RS384", "RS512", "PS256"})
    CHECK(verify(rsa_key().sign(claims_now(), alg), keys) == jwt_failure::none);
  CHECK(verify(p256_key().sign(claims_now(), "ES256"), keys) == jwt_failure::none);
  CHECK(verify(p384_key().sign(claims_now(), "ES384"), keys) == jwt_failure::none);
  CHECK(verify(ed_key().sign(claims_now(), "EdDSA"), keys) == jwt_failure::none);
  const auto verified = verify_signature(ed_key().sign(claims_now({{"sub", "bob"}}), "EdDSA"), keys);
  REQUIRE(verified.claims);
  CHECK((*verified.claims)["sub"] == "bob");
}

TEST_CASE("tokens the gateway refuses, each for its reason", "[unit][auth][jwt]") {
  const auto keys = all_keys();
  const auto good = rsa_key().sign(claims_now(), "RS256");

  SECTION("alg none") { CHECK(verify(gather::test::none_token(claims_now()), keys) == jwt_failure::alg); }
  SECTION("HS256 with the RSA public key as the secret") {
    const json header{{"alg", "HS256"}, {"typ", "JWT"}, {"kid", "rsa-1"}};
    CHECK(verify(gather::test::hs256_token(header, claims_now(), rsa_key().public_pem()), keys) ==
          jwt_failure::alg);
  }
  SECTION("a tampered payload") {
    CHECK(verify(gather::test::with_payload(good, claims_now({{"sub", "mallory"}})), keys) ==
          jwt_failure::signature);
  }
  SECTION("a signature of another key under the same kid") {
    const signing_key impostor{key_kind::ec_p256, "ec-256"};
    CHECK(verify(impostor.sign(claims_now(), "ES256"), keys) == jwt_failure::signature);
  }
  SECTION("an unknown kid") {
    CHECK(verify(rsa_other().sign(claims_now(), "RS256"), keys) == jwt_failure::kid);
  }
  SECTION("an alg that does not fit the key's type") {
    // An RSA kid with an EC algorithm, and an EC key's kid with RS256.
    CHECK(verify(rsa_key().sign(claims_now(), "RS256", {{"alg", "ES256"}}), keys) == jwt_failure::alg);
    const signing_key liar{key_kind::rsa, "ec-256"};
    CHECK(verify(liar.sign(claims_now(), "RS256"), keys) == jwt_failure::alg);
  }
  SECTION("an alg other than the key's own alg") {
    auto jwks = json{{"keys", {rsa_key().jwk("RS256")}}};
    CHECK(verify(rsa_key().sign(claims_now(), "RS256"), set_of(jwks)) == jwt_failure::none);
    CHECK(verify(rsa_key().sign(claims_now(), "PS256"), set_of(jwks)) == jwt_failure::alg);
  }
  SECTION("without a kid every key of the type is tried") {
    const signing_key anonymous{key_kind::ed25519, ""};
    auto jwks = gather::test::jwk_set_of({&ed_key(), &anonymous});
    CHECK(verify(anonymous.sign(claims_now(), "EdDSA"), set_of(jwks)) == jwt_failure::none);
    CHECK(verify(anonymous.sign(claims_now(), "EdDSA"), keys) == jwt_failure::signature);
  }
  SECTION("an ES256 signature in DER instead of JOSE r||s") {
    const auto token = p256_key().sign(claims_now(), "ES256");
    const auto sig = *base64url_decode(token.substr(token.rfind('.') + 1));
    // A DER sequence is never exactly 64 bytes of r||s: refused before OpenSSL sees it.
    CHECK(verify(token.substr(0, token.rfind('.') + 1) + base64url_encode("\x30" + sig), keys) ==
          jwt_failure::signature);
  }
  SECTION("malformed tokens") {
    for (const std::string& token : std::vector<std::string>{"", "a.b", "a.b.c.d", "!!.e30.", good + "=",
                                    "e30.e30.", // {} header: no alg
                                    "W10.e30."}) // [] header
      CHECK((verify(token, keys) == jwt_failure::malformed || verify(token, keys) == jwt_failure::alg));
    CHECK(verify(rsa_key().sign(claims_now(), "RS256", {{"crit", {"exp"}}}), keys) ==
          jwt_failure::malformed);
  }
  SECTION("key material inside the token is never used") {
    const signing_key attacker{key_kind::rsa, "rsa-1"};
    const auto token = attacker.sign(claims_now(), "RS256", {{"jwk", attacker.jwk()}, {"jku", "http://127.0.0.1:1/"}});
    CHECK(verify(token, keys) == jwt_failure::signature);
  }
}

TEST_CASE("claims: exp, nbf, iat, iss, aud with leeway, and require", "[unit][auth][jwt]") {
  jwt_config policy;
  policy.leeway = std::chrono::seconds{60};
  const double now = 1'800'000'000;
  const auto claims = [&](json extra) {
    json c{{"sub", "alice"}, {"exp", now + 10}};
    c.update(extra);
    return c;
  };
  CHECK(check_claims(claims(json::object()), policy, now) == jwt_failure::none);
  CHECK(check_claims(claims({{"exp", now - 30}}), policy, now) == jwt_failure::none); // within leeway
  CHECK(check_claims(claims({{"exp", now - 61}}), policy, now) == jwt_failure::exp);
  CHECK(check_claims(json{{"sub", "x"}}, policy, now) == jwt_failure::exp);           // no exp
  CHECK(check_claims(claims({{"exp", "tomorrow"}}), policy, now) == jwt_failure::exp);
  CHECK(check_claims(claims({{"nbf", now + 30}}), policy, now) == jwt_failure::none);
  CHECK(check_claims(claims({{"nbf", now + 61}}), policy, now) == jwt_failure::nbf);
  CHECK(check_claims(claims({{"iat", now + 61}}), policy, now) == jwt_failure::iat);
  policy.leeway = std::chrono::seconds{0};
  CHECK(check_claims(claims({{"exp", now - 1}}), policy, now) == jwt_failure::exp);

  policy.issuer = "https://id.example.com/";
  policy.audience = "shop-web";
  const json iss_aud{{"iss", "https://id.example.com/"}, {"aud", "shop-web"}};
  CHECK(check_claims(claims(iss_aud), policy, now) == jwt_failure::none);
  CHECK(check_claims(claims({{"iss", "https://evil.example.com/"}, {"aud", "shop-web"}}), policy, now) ==
        jwt_failure::iss);
  CHECK(check_claims(claims({{"iss", "https://id.example.com/"}}), policy, now) == jwt_failure::aud);
  CHECK(check_claims(claims({{"iss", "https://id.example.com/"}, {"aud", {"admin", "shop-web"}}}), policy,
                     now) == jwt_failure::none);
  CHECK(check_claims(claims({{"iss", "https://id.example.com/"}, {"aud", {"admin"}}}), policy, now) ==
        jwt_failure::aud);

  policy.require = {{"scope", "orders:read"}, {"roles", "buyer"}, {"tier", "3"}};
  const auto with = [&](json extra) {
    json c = claims(iss_aud);
    c.update(extra);
    return c;
  };
  const json all{{"scope", "profile orders:read"}, {"roles", {"buyer", "seller"}}, {"tier", 3}};
  CHECK(check_claims(with(all), policy, now) == jwt_failure::none);
  auto partial = all;
  partial["scope"] = "orders:readwrite profile";
  CHECK(check_claims(with(partial), policy, now) == jwt_failure::forbidden);
  partial = all;
  partial.erase("roles");
  CHECK(check_claims(with(partial), policy, now) == jwt_failure::forbidden);
  partial = all;
  partial["tier"] = 4;
  CHECK(check_claims(with(partial), policy, now) == jwt_failure::forbidden);
}

TEST_CASE("bearer tokens and claim texts", "[unit][auth][jwt]") {
  CHECK(bearer_token("Bearer abc.def.ghi") == "abc.def.ghi");
  CHECK(bearer_token("bearer   abc ") == "abc");
  CHECK(bearer_token("Basic dXNlcjpwYXNz").empty());
  CHECK(bearer_token("Bearer").empty());
  CHECK(bearer_token("").empty());
  const json claims{{"sub", "a/b"}, {"n", 42}, {"ok", true}, {"obj", {{"a", 1}}}, {"nul", nullptr}};
  CHECK(claim_text(claims, "sub") == "a/b");
  CHECK(claim_text(claims, "n") == "42");
  CHECK(claim_text(claims, "ok") == "true");
  CHECK(claim_text(claims, "obj").empty());
  CHECK(claim_text(claims, "nul").empty());
  CHECK(claim_text(claims, "absent").empty());
}

// Writes the seeds of fuzz/corpus/jwt and fuzz/corpus/rate_key (hidden: run by hand with
// `gather_tests "[.fuzzseed]"` and GATHER_SEED_DIR=fuzz/corpus): real keys and tokens of every kind.
TEST_CASE("write fuzz seeds", "[.fuzzseed]") {
  const char* dir = std::getenv("GATHER_SEED_DIR");
  if (!dir) {
    SUCCEED("GATHER_SEED_DIR is not set: no seed written");
    return;
  }
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << bytes;
  };
  const auto jwks = gather::test::jwk_set_of({&rsa_key(), &p256_key(), &p384_key(), &ed_key()}).dump();
  const json claims = claims_now({{"iss", "i"}, {"aud", {"a", "b"}}, {"scope", "s t"}, {"nbf", 1}});
  write("jwt/rs256", jwks + "\n" + rsa_key().sign(claims, "RS256"));
  write("jwt/ps256", jwks + "\n" + rsa_key().sign(claims, "PS256"));
  write("jwt/es256", jwks + "\n" + p256_key().sign(claims, "ES256"));
  write("jwt/es384", jwks + "\n" + p384_key().sign(claims, "ES384"));
  write("jwt/eddsa", jwks + "\n" + ed_key().sign(claims, "EdDSA"));
  write("jwt/none", jwks + "\n" + gather::test::none_token(claims));
  write("jwt/hs256", jwks + "\n" +
                         gather::test::hs256_token({{"alg", "HS256"}}, claims, rsa_key().public_pem()));
  write("jwt/oct_only", R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})" "\nBearer e30.e30.");
  write("rate_key/header", "header:X-Api-Key\n127.0.0.1\nx-api-key: k1\nX-Api-Key: k2\n");
  write("rate_key/claim", "claim:sub\n::1\n{\"sub\": \"alice\", \"n\": 1}\n");
  write("rate_key/ip", "ip\n127.0.0.5\n");
  write("rate_key/route", "route\n127.0.0.5\nx: y\n");
}
