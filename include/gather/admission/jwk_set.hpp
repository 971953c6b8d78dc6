// A JSON Web Key Set (RFC 7517) turned into OpenSSL public keys, once per set: RSA (n, e), EC P-256
// and P-384 (x, y) and OKP Ed25519 (x). Shared secrets (`oct`) and encryption keys are never used
// at the gateway: they are skipped, as are key types it cannot verify with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/evp.h>

namespace gather {

/// What a key can verify: the JOSE algorithms fit for it are fixed by its type.
enum class jwk_type { rsa, ec_p256, ec_p384, ed25519 };

struct evp_pkey_free {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using evp_pkey_ptr = std::unique_ptr<EVP_PKEY, evp_pkey_free>;

struct jwk {
  std::string kid;  ///< "" when the key has none
  jwk_type type = jwk_type::rsa;
  std::string alg;  ///< the key's own `alg`, "" when it has none
  std::shared_ptr<EVP_PKEY> key;
};

struct jwk_set {
  std::vector<jwk> keys;
};

/// A set as read: the usable keys, the keys left out on purpose (`oct`, `use: enc`, unknown
/// types: `skipped`) and the keys of a supported type that are malformed (`invalid`), each
/// "keys[i]: why".
struct jwk_set_result {
  std::optional<jwk_set> value; ///< nullopt when the text is not a JWK set at all
  std::vector<std::string> skipped;
  std::vector<std::string> invalid;
  std::string problem; ///< why `value` is nullopt
};

/// RSA keys under this many bits are refused (RFC 7518 §3.3 asks for 2048).
constexpr int min_rsa_bits = 2048;

jwk_set_result parse_jwk_set(std::string_view json_text);

} // namespace gather
