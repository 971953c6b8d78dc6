#include "gather/admission/jwt.hpp"

#include <algorithm>
#include <strings.h>

#include <openssl/ecdsa.h>
#include <openssl/rsa.h>

#include "gather/admission/base64url.hpp"

namespace gather {

namespace {

using json = nlohmann::json;

/// The algorithms a gateway verifies, with what each needs.
struct algorithm {
  std::string_view name;
  jwk_type type;         ///< for RSA, any RSA key
  const char* digest;    ///< nullptr for EdDSA (no pre-hash)
  bool pss = false;
};

constexpr algorithm algorithms[] = {
    {"RS256", jwk_type::rsa, "SHA256"},     {"RS384", jwk_type::rsa, "SHA384"},
    {"RS512", jwk_type::rsa, "SHA512"},     {"PS256", jwk_type::rsa, "SHA256", true},
    {"ES256", jwk_type::ec_p256, "SHA256"}, {"ES384", jwk_type::ec_p384, "SHA384"},
    {"EdDSA", jwk_type::ed25519, nullptr},
};

const algorithm* find_algorithm(std::string_view name) {
  for (const auto& a : algorithms)
    if (a.name == name)
      return &a;
  return nullptr;
}

/// The digests, fetched once (an implicit fetch per verify costs a lookup under a lock).
const EVP_MD* digest(const char* name) {
  static EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  static EVP_MD* sha384 = EVP_MD_fetch(nullptr, "SHA384", nullptr);
  static EVP_MD* sha512 = EVP_MD_fetch(nullptr, "SHA512", nullptr);
  if (!name)
    return nullptr;
  const std::string_view n(name);
  return n == "SHA256" ? sha256 : n == "SHA384" ? sha384 : sha512;
}

struct md_ctx_free {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct ecdsa_sig_free {
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};

/// JOSE's ECDSA signature is r || s, each the curve's size; OpenSSL verifies DER.
std::optional<std::string> jose_to_der(std::string_view signature, std::size_t half) {
  if (signature.size() != 2 * half)
    return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(signature.data());
  std::unique_ptr<ECDSA_SIG, ecdsa_sig_free> sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes, static_cast<int>(half), nullptr);
  BIGNUM* s = BN_bin2bn(bytes + half, static_cast<int>(half), nullptr);
  if (!sig || !r || !s || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  const int length = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (length <= 0)
    return std::nullopt;
  std::string der(static_cast<std::size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_ECDSA_SIG(sig.get(), &out);
  return der;
}

bool verify_with(const algorithm& alg, EVP_PKEY* key, std::string_view signing_input,
                 std::string_view signature) {
  std::string der;
  if (alg.type == jwk_type::ec_p256 || alg.type == jwk_type::ec_p384) {
    auto converted = jose_to_der(signature, alg.type == jwk_type::ec_p256 ? 32 : 48);
    if (!converted)
      return false;
    der = std::move(*converted);
    signature = der;
  }
  const std::unique_ptr<EVP_MD_CTX, md_ctx_free> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), &pctx, digest(alg.digest), nullptr, key) != 1)
    return false;
  if (alg.pss && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1 ||
                  EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, digest(alg.digest)) != 1))
    return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(),
                          reinterpret_cast<const unsigned char*>(signing_input.data()),
                          signing_input.size()) == 1;
}

/// A base64url part that must be a JSON object.
std::optional<json> json_part(std::string_view part) {
  const auto bytes = base64url_decode(part);
  if (!bytes)
    return std::nullopt;
  json value = json::parse(*bytes, nullptr, false);
  if (value.is_discarded() || !value.is_object())
    return std::nullopt;
  return value;
}

const json* member(const json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

/// A NumericDate claim (RFC 7519 §2): nullopt when absent, NaN when present but not a number.
std::optional<double> numeric_date(const json& claims, const char* name) {
  const json* value = member(claims, name);
  if (!value)
    return std::nullopt;
  return value->is_number() ? value->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

bool holds(const json& claim, const std::string& wanted) {
  if (claim.is_string()) {
    // A string with spaces (`scope`) holds each of its words.
    std::string_view text = claim.get_ref<const std::string&>();
    while (!text.empty()) {
      const auto space = text.find(' ');
      if (text.substr(0, space) == wanted)
        return true;
      if (space == std::string_view::npos)
        break;
      text.remove_prefix(space + 1);
    }
    return false;
  }
  if (claim.is_array())
    return std::any_of(claim.begin(), claim.end(), [&](const json& entry) {
      return entry.is_string() ? entry.get_ref<const std::string&>() == wanted
                               : (entry.is_primitive() && !entry.is_null() && entry.dump() == wanted);
    });
  return claim.is_primitive() && !claim.is_null() && claim.dump() == wanted;
}

} // namespace

const char* reason_text(jwt_failure failure) {
  switch (failure) {
    case jwt_failure::none: return "ok";
    case jwt_failure::missing: return "missing";
    case jwt_failure::malformed: return "malformed";
    case jwt_failure::alg: return "alg";
    case jwt_failure::kid: return "kid";
    case jwt_failure::signature: return "signature";
    case jwt_failure::exp: return "exp";
    case jwt_failure::nbf: return "nbf";
    case jwt_failure::iat: return "iat";
    case jwt_failure::iss: return "iss";
    case jwt_failure::aud: return "aud";
    case jwt_failure::forbidden: return "forbidden";
  }
  return "invalid";
}

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size() ||
      strncasecmp(authorization.data(), scheme.data(), scheme.size()) != 0)
    return {};
  auto token = authorization.substr(scheme.size());
  while (!token.empty() && token.front() == ' ')
    token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
    token.remove_suffix(1);
  return token;
}

verified_token verify_signature(std::string_view token, const jwk_set& keys) {
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return {jwt_failure::malformed, nullptr};
  const auto header = json_part(token.substr(0, first));
  auto payload = header ? json_part(token.substr(first + 1, second - first - 1)) : std::nullopt;
  const auto signature = payload ? base64url_decode(token.substr(second + 1)) : std::nullopt;
  if (!signature || member(*header, "crit"))
    return {jwt_failure::malformed, nullptr};
  const json* alg_name = member(*header, "alg");
  const algorithm* alg =
      alg_name && alg_name->is_string() ? find_algorithm(alg_name->get_ref<const std::string&>()) : nullptr;
  if (!alg)
    return {jwt_failure::alg, nullptr};
  const json* kid = member(*header, "kid");
  if (kid && !kid->is_string())
    return {jwt_failure::malformed, nullptr};
  const std::string_view signing_input = token.substr(0, second);
  bool kid_found = false, fitting = false;
  for (const jwk& key : keys.keys) {
    if (kid && key.kid != kid->get_ref<const std::string&>())
      continue;
    kid_found = true;
    if (key.type != alg->type || (!key.alg.empty() && key.alg != alg->name))
      continue;
    fitting = true;
    if (verify_with(*alg, key.key.get(), signing_input, *signature))
      return {jwt_failure::none, std::make_shared<const json>(std::move(*payload))};
  }
  if (kid && !kid_found)
    return {jwt_failure::kid, nullptr};
  return {fitting ? jwt_failure::signature : jwt_failure::alg, nullptr};
}

jwt_failure check_claims(const json& claims, const jwt_config& policy, double now) {
  const double leeway = static_cast<double>(policy.leeway.count());
  const auto exp = numeric_date(claims, "exp");
  // NaN (not a number) fails every comparison: `!(now <= exp + leeway)` refuses it.
  if (!exp || !(now <= *exp + leeway))
    return jwt_failure::exp;
  if (const auto nbf = numeric_date(claims, "nbf"); nbf && !(*nbf <= now + leeway))
    return jwt_failure::nbf;
  if (const auto iat = numeric_date(claims, "iat"); iat && !(*iat <= now + leeway))
    return jwt_failure::iat;
  if (policy.issuer) {
    const json* iss = member(claims, "iss");
    if (!iss || !iss->is_string() || iss->get_ref<const std::string&>() != *policy.issuer)
      return jwt_failure::iss;
  }
  if (policy.audience) {
    const json* aud = member(claims, "aud");
    const auto is_audience = [&](const json& v) {
      return v.is_string() && v.get_ref<const std::string&>() == *policy.audience;
    };
    const bool ok = aud && (is_audience(*aud) ||
                            (aud->is_array() && std::any_of(aud->begin(), aud->end(), is_audience)));
    if (!ok)
      return jwt_failure::aud;
  }
  for (const auto& [name, wanted] : policy.require) {
    const json* claim = member(claims, name.c_str());
    if (!claim || !holds(*claim, wanted))
      return jwt_failure::forbidden;
  }
  return jwt_failure::none;
}

std::string claim_text(const json& claims, const std::string& name) {
  const json* claim = member(claims, name.c_str());
  if (!claim || claim->is_null() || !claim->is_primitive())
    return {};
  return claim->is_string() ? claim->get<std::string>() : claim->dump();
}

} // namespace gather
