// Keys and tokens made by the tests with OpenSSL: the issuer a real identity provider would be.
// Each key exports its public JWK; tokens are signed for any JOSE algorithm (HS256 included, to
// show the gateway refuses it) and may be spoilt on purpose.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace gather::test {

enum class key_kind { rsa, ec_p256, ec_p384, ed25519 };

class signing_key {
public:
  /// A fresh key (RSA: 2048 bits).
  signing_key(key_kind kind, std::string kid);
  /// The public JWK (with kid, without alg unless `alg` is given).
  nlohmann::json jwk(const std::string& alg = {}) const;
  /// header.payload.signature signed with `alg` (RS256/384/512, PS256, ES256/384, EdDSA).
  std::string sign(const nlohmann::json& claims, const std::string& alg,
                   const nlohmann::json& extra_header = nlohmann::json::object()) const;
  /// The public key as PEM (what an HS256 attack uses as the "secret").
  std::string public_pem() const;
  const std::string& kid() const { return kid_; }

private:
  key_kind kind_;
  std::string kid_;
  std::shared_ptr<EVP_PKEY> key_;
};

/// A JWK set of these keys' public JWKs.
nlohmann::json jwk_set_of(std::initializer_list<const signing_key*> keys);

/// An HS256 token signed with `secret` (never accepted by the gateway).
std::string hs256_token(const nlohmann::json& header, const nlohmann::json& claims,
                        const std::string& secret);
/// A token with `alg: none` and an empty signature.
std::string none_token(const nlohmann::json& claims);
/// `token` with its payload replaced by `claims` (the signature left as it was).
std::string with_payload(const std::string& token, const nlohmann::json& claims);

/// Seconds since the epoch, now.
double now_s();

/// Standard claims valid for an hour from now, plus `extra`.
nlohmann::json claims_now(nlohmann::json extra = nlohmann::json::object());

} // namespace gather::test
