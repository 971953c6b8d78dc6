// An http_reply as the bytes of an HTTP/1.1 response.
#pragma once

#include <string>
#include <string_view>

#include "gather/values/http_reply.hpp"

namespace gather {

struct response_framing {
  int version = 11;         ///< the request's: 10 or 11
  bool keep_alive = true;   ///< false: `Connection: close`
  bool head_only = false;   ///< a HEAD request: Content-Length but no body
};

/// Status line, Content-Type, Content-Length, X-Request-Id, the reply's own headers, the
/// connection header where it differs from the version's default, then the body (a 204: neither
/// Content-Type, Content-Length nor body).
std::string response_bytes(const http_reply& reply, const std::string& request_id,
                           response_framing framing);

/// The head of a progressive answer: as above, with `Transfer-Encoding: chunked` in HTTP/1.1 and
/// no length at all in HTTP/1.0 (whose body then ends with the connection).
std::string stream_head_bytes(const http_reply& head, const std::string& request_id,
                              response_framing framing);

/// One piece of a progressive answer as one chunk (HTTP/1.1) or as it is (HTTP/1.0); `last` adds
/// the terminating chunk. An empty piece makes no chunk (a zero-size chunk would end the body).
std::string chunk_bytes(std::string_view piece, int version, bool last);

/// The interim answer to `Expect: 100-continue`.
inline const std::string continue_bytes = "HTTP/1.1 100 Continue\r\n\r\n";

} // namespace gather
