#include "gather/front/tls_context.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace gather {

namespace {

namespace ssl = boost::asio::ssl;

/// Loads both files into `ctx`, adding a problem for each thing that fails.
void load(ssl::context& ctx, const tls_config& tls, std::vector<std::string>& problems) {
  bool readable = true;
  for (auto [key, file] : {std::pair{"tls.cert_file", &tls.cert_file}, {"tls.key_file", &tls.key_file}}) {
    std::FILE* f = std::fopen(file->c_str(), "rb");
    if (!f) {
      problems.push_back(std::string{key} + ": cannot read " + *file + ": " + std::strerror(errno));
      readable = false;
    } else {
      std::fclose(f);
    }
  }
  if (!readable)
    return;
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(tls.cert_file, ec);
  if (ec)
    problems.push_back("tls.cert_file: " + tls.cert_file + " is not a PEM certificate chain");
  ctx.use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec)
    problems.push_back("tls.key_file: " + tls.key_file +
                       " is not a PEM private key, or does not belong to tls.cert_file");
  if (problems.empty() && SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    problems.push_back("tls.key_file: does not belong to the certificate in tls.cert_file");
}

/// ALPN (RFC 7301): h2 when the client offers it, else http/1.1; a client offering neither goes
/// on without ALPN (and is served HTTP/1.1).
int select_protocol(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* offered,
                    unsigned int offered_size, void*) {
  static const unsigned char ours[] = "\x02h2\x08http/1.1";
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_size, ours, sizeof(ours) - 1, offered, offered_size) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

std::unique_ptr<ssl::context> new_context() {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  SSL_CTX_set_alpn_select_cb(ctx->native_handle(), select_protocol, nullptr);
  return ctx;
}

} // namespace

std::vector<std::string> tls_problems(const tls_config& tls) {
  std::vector<std::string> problems;
  auto ctx = new_context();
  load(*ctx, tls, problems);
  return problems;
}

std::unique_ptr<ssl::context> make_tls_context(const tls_config& tls) {
  std::vector<std::string> problems;
  auto ctx = new_context();
  load(*ctx, tls, problems);
  if (!problems.empty()) {
    std::string text = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i)
      text += "; " + problems[i];
    throw std::runtime_error(text);
  }
  return ctx;
}

} // namespace gather
