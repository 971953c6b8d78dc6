#include "gather/admission/jwk_set.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <nlohmann/json.hpp>

#include "gather/admission/base64url.hpp"

namespace gather {

namespace {

using json = nlohmann::json;

struct param_bld_free {
  void operator()(OSSL_PARAM_BLD* b) const { OSSL_PARAM_BLD_free(b); }
};
struct params_free {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
struct pkey_ctx_free {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct bn_free {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using bn_ptr = std::unique_ptr<BIGNUM, bn_free>;

/// A member that must be a base64url string; nullopt (and `why` set) otherwise.
std::optional<std::string> bytes_member(const json& key, const char* name, std::string& why) {
  const auto it = key.find(name);
  if (it == key.end() || !it->is_string()) {
    why = std::string("\"") + name + "\" must be a base64url string";
    return std::nullopt;
  }
  auto bytes = base64url_decode(it->get_ref<const std::string&>());
  if (!bytes || bytes->empty()) {
    why = std::string("\"") + name + "\" is not base64url";
    return std::nullopt;
  }
  return bytes;
}

/// Builds a public key of `type_name` from `params` (OSSL_PKEY_PARAM_*), checked by OpenSSL.
evp_pkey_ptr from_params(const char* type_name, OSSL_PARAM_BLD* builder, std::string& why) {
  const std::unique_ptr<OSSL_PARAM, params_free> params(OSSL_PARAM_BLD_to_param(builder));
  const std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type_name, nullptr));
  EVP_PKEY* key = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) <= 0) {
    why = "OpenSSL refused the key";
    return nullptr;
  }
  evp_pkey_ptr out(key);
  const std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free> check(
      EVP_PKEY_CTX_new_from_pkey(nullptr, out.get(), nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) <= 0) {
    why = "OpenSSL's public key check failed";
    return nullptr;
  }
  return out;
}

evp_pkey_ptr rsa_key(const json& key, std::string& why) {
  const auto n = bytes_member(key, "n", why);
  const auto e = n ? bytes_member(key, "e", why) : std::nullopt;
  if (!n || !e)
    return nullptr;
  if (e->size() > 8) {
    why = "\"e\" is too large";
    return nullptr;
  }
  const bn_ptr bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()),
                              static_cast<int>(n->size()), nullptr));
  const bn_ptr bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()),
                              static_cast<int>(e->size()), nullptr));
  if (!bn_n || !bn_e)
    return nullptr;
  if (BN_num_bits(bn_n.get()) < min_rsa_bits || BN_num_bits(bn_n.get()) > 16384) {
    why = "an RSA modulus of " + std::to_string(BN_num_bits(bn_n.get())) +
          " bits (from " + std::to_string(min_rsa_bits) + " to 16384 are used)";
    return nullptr;
  }
  const std::unique_ptr<OSSL_PARAM_BLD, param_bld_free> builder(OSSL_PARAM_BLD_new());
  if (!builder || !OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) ||
      !OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()))
    return nullptr;
  return from_params("RSA", builder.get(), why);
}

evp_pkey_ptr ec_key(const json& key, jwk_type type, std::string& why) {
  const std::size_t size = type == jwk_type::ec_p256 ? 32 : 48;
  const auto x = bytes_member(key, "x", why);
  const auto y = x ? bytes_member(key, "y", why) : std::nullopt;
  if (!x || !y)
    return nullptr;
  if (x->size() != size || y->size() != size) {
    why = "\"x\" and \"y\" must be " + std::to_string(size) + " bytes each";
    return nullptr;
  }
  // An uncompressed point: 0x04 || x || y (SEC 1 §2.3.3).
  const std::string point = "\x04" + *x + *y;
  const std::unique_ptr<OSSL_PARAM_BLD, param_bld_free> builder(OSSL_PARAM_BLD_new());
  const char* group = type == jwk_type::ec_p256 ? "prime256v1" : "secp384r1";
  if (!builder ||
      !OSSL_PARAM_BLD_push_utf8_string(builder.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ||
      !OSSL_PARAM_BLD_push_octet_string(builder.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                        point.size()))
    return nullptr;
  return from_params("EC", builder.get(), why);
}

evp_pkey_ptr ed25519_key(const json& key, std::string& why) {
  const auto x = bytes_member(key, "x", why);
  if (!x)
    return nullptr;
  if (x->size() != 32) {
    why = "\"x\" must be 32 bytes";
    return nullptr;
  }
  evp_pkey_ptr out(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size()));
  if (!out)
    why = "OpenSSL refused the key";
  return out;
}

std::string string_member(const json& key, const char* name) {
  const auto it = key.find(name);
  return it != key.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// The algorithms a key's `alg` may name, by type.
bool alg_fits(jwk_type type, const std::string& alg) {
  switch (type) {
    case jwk_type::rsa: return alg == "RS256" || alg == "RS384" || alg == "RS512" || alg == "PS256";
    case jwk_type::ec_p256: return alg == "ES256";
    case jwk_type::ec_p384: return alg == "ES384";
    case jwk_type::ed25519: return alg == "EdDSA";
  }
  return false;
}

enum class verdict { use, skip, invalid };

/// Reads one key into `out`; `why` says why it is not used.
verdict read_key(const json& key, jwk& out, std::string& why) {
  if (!key.is_object()) {
    why = "must be an object";
    return verdict::invalid;
  }
  const auto kty = key.find("kty");
  if (kty == key.end() || !kty->is_string()) {
    why = "\"kty\" must be a string";
    return verdict::invalid;
  }
  const std::string& type = kty->get_ref<const std::string&>();
  const std::string use = string_member(key, "use");
  if (key.contains("use") && use != "sig") {
    why = "\"use\" is not \"sig\"";
    return verdict::skip;
  }
  if (const auto ops = key.find("key_ops"); ops != key.end()) {
    const bool verifies = ops->is_array() && std::find(ops->begin(), ops->end(), json("verify")) != ops->end();
    if (!verifies) {
      why = "\"key_ops\" has no \"verify\"";
      return verdict::skip;
    }
  }
  const std::string crv = string_member(key, "crv");
  evp_pkey_ptr pkey;
  if (type == "RSA") {
    out.type = jwk_type::rsa;
    pkey = rsa_key(key, why);
  } else if (type == "EC" && (crv == "P-256" || crv == "P-384")) {
    out.type = crv == "P-256" ? jwk_type::ec_p256 : jwk_type::ec_p384;
    pkey = ec_key(key, out.type, why);
  } else if (type == "OKP" && crv == "Ed25519") {
    out.type = jwk_type::ed25519;
    pkey = ed25519_key(key, why);
  } else if (type == "oct") {
    why = "kty \"oct\" (a shared secret) is never used: the gateway holds no secrets";
    return verdict::skip;
  } else {
    why = "kty \"" + type + "\"" + (crv.empty() ? "" : " crv \"" + crv + "\"") + " is not supported";
    return verdict::skip;
  }
  if (!pkey)
    return verdict::invalid;
  out.kid = string_member(key, "kid");
  out.alg = string_member(key, "alg");
  if (key.contains("alg") && !alg_fits(out.type, out.alg)) {
    why = "\"alg\" does not fit the key's type";
    return verdict::invalid;
  }
  out.key = std::shared_ptr<EVP_PKEY>(pkey.release(), evp_pkey_free{});
  return verdict::use;
}

} // namespace

jwk_set_result parse_jwk_set(std::string_view json_text) {
  jwk_set_result result;
  const json document = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (document.is_discarded()) {
    result.problem = "not JSON";
    return result;
  }
  const auto keys = document.is_object() ? document.find("keys") : document.end();
  if (!document.is_object() || keys == document.end() || !keys->is_array()) {
    result.problem = "not a JWK set (an object with a \"keys\" array)";
    return result;
  }
  jwk_set set;
  for (std::size_t i = 0; i < keys->size(); ++i) {
    jwk key;
    std::string why;
    const std::string where = "keys[" + std::to_string(i) + "]: ";
    switch (read_key((*keys)[i], key, why)) {
      case verdict::use: set.keys.push_back(std::move(key)); break;
      case verdict::skip: result.skipped.push_back(where + why); break;
      case verdict::invalid: result.invalid.push_back(where + why); break;
    }
  }
  result.value = std::move(set);
  return result;
}

} // namespace gather
