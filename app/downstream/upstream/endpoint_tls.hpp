// An upstream's TLS contexts (call_target.hpp): one for the HTTP/1.1 pools (no ALPN), one for
// HTTP/2 links (ALPN h2, then http/1.1), both with the upstream's CA and client certificate.
// Shared by every loop: OpenSSL makes connections from one SSL_CTX on many threads. Private to
// app/downstream/.
#pragma once

#include <memory>
#include <string>

#include "gather/downstream/call/call_target.hpp"

#include "pool/origin_connection.hpp"

namespace gather {

struct endpoint_tls {
  std::unique_ptr<boost::asio::ssl::context> http1;
  std::unique_ptr<boost::asio::ssl::context> http2;
  std::string tag;
};

} // namespace gather
