// Fuzzes the token path (app/admission/): base64url, the JWS header and payload JSON, JWK set
// import into OpenSSL keys, signature verification and the claim checks.
// Input: a JWK set's text, a newline, then the token.
// Invariants: base64url decoding is canonical (encoding what it decoded gives the text back); a
// token is accepted only with its claims as a JSON object; nothing throws or crashes; a set that
// imports has only keys OpenSSL accepted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "gather/admission/base64url.hpp"
#include "gather/admission/jwk_set.hpp"
#include "gather/admission/jwt.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const std::string_view jwks = input.substr(0, newline);
  const std::string_view token = newline == std::string_view::npos ? input : input.substr(newline + 1);

  if (const auto decoded = gather::base64url_decode(token))
    FUZZ_CHECK(gather::base64url_encode(*decoded) == token);

  // Key import is the slow part (RSA, EC point checks): a set that did not change since the last
  // input is not imported again, so most runs spend their time on the token.
  static std::string last_jwks;
  static gather::jwk_set_result last_set;
  if (last_jwks != jwks || (!last_set.value && last_set.problem.empty())) {
    last_jwks = std::string(jwks);
    last_set = gather::parse_jwk_set(jwks);
  }
  const auto& set = last_set;
  if (!set.value) {
    FUZZ_CHECK(!set.problem.empty());
    return 0;
  }
  for (const auto& key : set.value->keys)
    FUZZ_CHECK(key.key != nullptr);

  const auto verified = gather::verify_signature(token, *set.value);
  if (verified.failure == gather::jwt_failure::none) {
    FUZZ_CHECK(verified.claims && verified.claims->is_object());
    gather::jwt_config policy;
    policy.issuer = "i";
    policy.audience = "a";
    policy.require = {{"scope", "s"}};
    (void)gather::check_claims(*verified.claims, policy, 1.8e9);
    (void)gather::claim_text(*verified.claims, "sub");
  } else {
    FUZZ_CHECK(!verified.claims);
  }
  FUZZ_CHECK(gather::bearer_token(token).size() <= token.size());
  return 0;
}
