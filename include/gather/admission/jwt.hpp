// Checking a bearer JWT (RFC 7519, JWS compact form RFC 7515) against a JWK set: the signature by
// OpenSSL's EVP verify, then the claims (docs/security.md, "Who may come in").
//
// Refused on sight: `alg: none`, HS* (the gateway holds no shared secrets), any other algorithm
// than RS256/384/512, PS256, ES256/384 and EdDSA, an algorithm that does not fit the key (its
// `kty`, `crv` and own `alg`), a `crit` header (no extension is understood), and key material in
// the token itself (`jwk`, `jku`, `x5u`, `x5c` are never read: keys come only from the set).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gather/admission/jwk_set.hpp"
#include "gather/config/config.hpp"

namespace gather {

/// Why a token was not accepted; the text of each (reason_text) is what the log line names.
enum class jwt_failure {
  none,
  missing,   ///< no `Authorization: Bearer` token
  malformed, ///< not three base64url parts of JSON objects, or a `crit` header
  alg,       ///< an algorithm refused, or one that no key of the set fits
  kid,       ///< the token's `kid` names no key of the set
  signature, ///< no fitting key verifies the signature
  exp,       ///< `exp` absent, not a number, or passed (beyond the leeway)
  nbf,       ///< `nbf` in the future
  iat,       ///< `iat` in the future
  iss,       ///< `iss` is not the configured issuer
  aud,       ///< `aud` is not (and holds not) the configured audience
  forbidden, ///< a valid token without what `require` asks: 403
};

const char* reason_text(jwt_failure failure);

/// The token of an `Authorization` value "Bearer <token>" (scheme in any case); "" otherwise.
std::string_view bearer_token(std::string_view authorization);

/// A token whose signature a key of the set verified: its claims (a JSON object).
struct verified_token {
  jwt_failure failure = jwt_failure::none;
  std::shared_ptr<const nlohmann::json> claims; ///< set when the signature verified
};

/// Splits, decodes and verifies the signature; checks no claim.
verified_token verify_signature(std::string_view token, const jwk_set& keys);

/// The claim checks on verified claims at `now` (seconds since the epoch): exp, nbf, iat, iss,
/// aud with the leeway, then require (forbidden).
jwt_failure check_claims(const nlohmann::json& claims, const jwt_config& policy, double now);

/// A claim as a URL or header value: a string as is, a number as JSON writes it, a boolean as
/// "true"/"false"; "" when absent or not a scalar.
std::string claim_text(const nlohmann::json& claims, const std::string& name);

} // namespace gather
