// An http_reply as the bytes of an HTTP/1.1 response.
#pragma once

#include <string>

#include "gather/values/http_reply.hpp"

namespace gather {

struct response_framing {
  int version = 11;         ///< the request's: 10 or 11
  bool keep_alive = true;   ///< false: `Connection: close`
  bool head_only = false;   ///< a HEAD request: Content-Length but no body
};

/// Status line, Content-Type, Content-Length, X-Request-Id, the reply's own headers, the
/// connection header where it differs from the version's default, then the body.
std::string response_bytes(const http_reply& reply, const std::string& request_id,
                           response_framing framing);

/// The interim answer to `Expect: 100-continue`.
inline const std::string continue_bytes = "HTTP/1.1 100 Continue\r\n\r\n";

} // namespace gather
