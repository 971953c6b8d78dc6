// The TLS side of a downstream connection, as both clients of a loop set it up.
#include "pool/origin_connection.hpp"

#include "upstream/endpoint_tls.hpp"

namespace gather::downstream_loop {

std::unique_ptr<asio::ssl::context> make_client_tls(bool alpn_h2) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  error_code ignored;
  ctx->set_default_verify_paths(ignored); // the system's CAs (and SSL_CERT_FILE / SSL_CERT_DIR)
  ctx->set_verify_mode(asio::ssl::verify_peer);
  if (alpn_h2) {
    static const unsigned char protocols[] = "\x02h2\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx->native_handle(), protocols, sizeof protocols - 1);
  }
  return ctx;
}

void verify_host(asio::ssl::stream<tcp::socket>& stream, const std::string& host) {
  error_code not_ip;
  asio::ip::make_address(host, not_ip);
  if (not_ip)
    SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
}

asio::ssl::context& tls_context_for(const origin_and_target& where, asio::ssl::context& fallback, bool http2) {
  if (!where.origin->endpoint || !where.origin->endpoint->tls)
    return fallback;
  return http2 ? *where.origin->endpoint->tls->http2 : *where.origin->endpoint->tls->http1;
}

} // namespace gather::downstream_loop
