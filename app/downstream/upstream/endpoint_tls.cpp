// An upstream's TLS contexts from its files (endpoint_tls.hpp).
#include "upstream/endpoint_tls.hpp"

#include <cstdio>
#include <functional>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace gather {

namespace {

std::string file_text(const std::string& name) {
  std::string out;
  if (std::FILE* f = std::fopen(name.c_str(), "rb")) {
    char buffer[4096];
    while (const auto n = std::fread(buffer, 1, sizeof buffer, f))
      out.append(buffer, n);
    std::fclose(f);
  }
  return out;
}

std::string openssl_error() {
  const auto code = ERR_get_error();
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

/// The CA and the client certificate on one context; "" or what went wrong.
std::string load(boost::asio::ssl::context& ctx, const upstream_tls_config& tls) {
  auto* native = ctx.native_handle();
  if (!tls.ca_file.empty()) {
    // Only the upstream's CA: a certificate the system's CAs sign is not one of its endpoints.
    auto* store = X509_STORE_new();
    SSL_CTX_set_cert_store(native, store);
    if (SSL_CTX_load_verify_locations(native, tls.ca_file.c_str(), nullptr) != 1)
      return "ca_file " + tls.ca_file + ": " + openssl_error();
  }
  if (!tls.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(native, tls.cert_file.c_str()) != 1)
      return "cert_file " + tls.cert_file + ": " + openssl_error();
    if (SSL_CTX_use_PrivateKey_file(native, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      return "key_file " + tls.key_file + ": " + openssl_error();
    if (SSL_CTX_check_private_key(native) != 1)
      return "key_file " + tls.key_file + " is not cert_file's key";
  }
  return {};
}

} // namespace

std::shared_ptr<const endpoint_tls> make_endpoint_tls(const upstream_tls_config& tls, std::string& error) {
  auto out = std::make_shared<endpoint_tls>();
  out->http1 = downstream_loop::make_client_tls(false);
  out->http2 = downstream_loop::make_client_tls(true);
  error = load(*out->http1, tls);
  if (error.empty())
    error = load(*out->http2, tls);
  if (!error.empty())
    return nullptr;
  const auto digest = std::hash<std::string>{}(file_text(tls.ca_file) + '\0' + file_text(tls.cert_file) + '\0' +
                                               file_text(tls.key_file) + '\0' + tls.server_name);
  char tag[20];
  std::snprintf(tag, sizeof tag, "%016zx", digest);
  out->tag = tag;
  return out;
}

const std::string& tls_tag(const endpoint_tls& tls) { return tls.tag; }

} // namespace gather
