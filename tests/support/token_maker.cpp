#include "support/token_maker.hpp"

#include <chrono>
#include <stdexcept>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "gather/admission/base64url.hpp"

namespace gather::test {

namespace {

std::string bn_bytes(const BIGNUM* bn, int pad = 0) {
  const int size = pad ? pad : BN_num_bytes(bn);
  std::string out(static_cast<std::size_t>(size), '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), size);
  return out;
}

BIGNUM* bn_param(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1)
    throw std::runtime_error(std::string("no ") + name);
  return bn;
}

std::string b64(const std::string& bytes) { return base64url_encode(bytes); }

const EVP_MD* md_of(const std::string& alg) {
  if (alg == "EdDSA")
    return nullptr;
  if (alg.substr(2) == "384")
    return EVP_sha384();
  if (alg.substr(2) == "512")
    return EVP_sha512();
  return EVP_sha256();
}

} // namespace

signing_key::signing_key(key_kind kind, std::string kid) : kind_(kind), kid_(std::move(kid)) {
  EVP_PKEY* key = nullptr;
  switch (kind) {
    case key_kind::rsa: key = EVP_RSA_gen(2048); break;
    case key_kind::ec_p256: key = EVP_EC_gen("P-256"); break;
    case key_kind::ec_p384: key = EVP_EC_gen("P-384"); break;
    case key_kind::ed25519: {
      EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
      if (ctx && EVP_PKEY_keygen_init(ctx) == 1)
        EVP_PKEY_keygen(ctx, &key);
      EVP_PKEY_CTX_free(ctx);
      break;
    }
  }
  if (!key)
    throw std::runtime_error("key generation failed");
  key_.reset(key, EVP_PKEY_free);
}

nlohmann::json signing_key::jwk(const std::string& alg) const {
  nlohmann::json out;
  switch (kind_) {
    case key_kind::rsa: {
      BIGNUM* n = bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_N);
      BIGNUM* e = bn_param(key_.get(), OSSL_PKEY_PARAM_RSA_E);
      out = {{"kty", "RSA"}, {"n", b64(bn_bytes(n))}, {"e", b64(bn_bytes(e))}};
      BN_free(n);
      BN_free(e);
      break;
    }
    case key_kind::ec_p256:
    case key_kind::ec_p384: {
      const int size = kind_ == key_kind::ec_p256 ? 32 : 48;
      BIGNUM* x = bn_param(key_.get(), OSSL_PKEY_PARAM_EC_PUB_X);
      BIGNUM* y = bn_param(key_.get(), OSSL_PKEY_PARAM_EC_PUB_Y);
      out = {{"kty", "EC"}, {"crv", size == 32 ? "P-256" : "P-384"},
             {"x", b64(bn_bytes(x, size))}, {"y", b64(bn_bytes(y, size))}};
      BN_free(x);
      BN_free(y);
      break;
    }
    case key_kind::ed25519: {
      std::string raw(32, '\0');
      std::size_t length = raw.size();
      EVP_PKEY_get_raw_public_key(key_.get(), reinterpret_cast<unsigned char*>(raw.data()), &length);
      out = {{"kty", "OKP"}, {"crv", "Ed25519"}, {"x", b64(raw)}};
      break;
    }
  }
  if (!kid_.empty())
    out["kid"] = kid_;
  if (!alg.empty())
    out["alg"] = alg;
  return out;
}

std::string signing_key::sign(const nlohmann::json& claims, const std::string& alg,
                              const nlohmann::json& extra_header) const {
  nlohmann::json header{{"alg", alg}, {"typ", "JWT"}};
  if (!kid_.empty())
    header["kid"] = kid_;
  header.update(extra_header);
  const std::string input = b64(header.dump()) + "." + b64(claims.dump());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  if (EVP_DigestSignInit(ctx, &pctx, md_of(alg), nullptr, key_.get()) != 1)
    throw std::runtime_error("sign init");
  if (alg == "PS256") {
    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
  }
  std::size_t length = 0;
  EVP_DigestSign(ctx, nullptr, &length, reinterpret_cast<const unsigned char*>(input.data()),
                 input.size());
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
    throw std::runtime_error("sign");
  EVP_MD_CTX_free(ctx);
  signature.resize(length);
  if (alg == "ES256" || alg == "ES384") {
    // DER -> JOSE r || s.
    const int half = alg == "ES256" ? 32 : 48;
    const auto* der = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size()));
    signature = bn_bytes(ECDSA_SIG_get0_r(sig), half) + bn_bytes(ECDSA_SIG_get0_s(sig), half);
    ECDSA_SIG_free(sig);
  }
  return input + "." + b64(signature);
}

std::string signing_key::public_pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, key_.get());
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(length));
  BIO_free(bio);
  return pem;
}

nlohmann::json jwk_set_of(std::initializer_list<const signing_key*> keys) {
  nlohmann::json set{{"keys", nlohmann::json::array()}};
  for (const auto* key : keys)
    set["keys"].push_back(key->jwk());
  return set;
}

std::string hs256_token(const nlohmann::json& header, const nlohmann::json& claims,
                        const std::string& secret) {
  const std::string input = b64(header.dump()) + "." + b64(claims.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &length);
  return input + "." + b64(std::string(reinterpret_cast<char*>(mac), length));
}

std::string none_token(const nlohmann::json& claims) {
  return b64(nlohmann::json{{"alg", "none"}, {"typ", "JWT"}}.dump()) + "." + b64(claims.dump()) + ".";
}

std::string with_payload(const std::string& token, const nlohmann::json& claims) {
  const auto first = token.find('.');
  const auto second = token.find('.', first + 1);
  return token.substr(0, first + 1) + b64(claims.dump()) + token.substr(second);
}

double now_s() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count() / 1000.0;
}

nlohmann::json claims_now(nlohmann::json extra) {
  const auto now = static_cast<long long>(now_s());
  nlohmann::json claims{{"sub", "alice"}, {"iat", now}, {"exp", now + 3600}};
  claims.update(extra);
  return claims;
}

} // namespace gather::test
