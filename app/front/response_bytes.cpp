#include "gather/front/response_bytes.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <ostream> // see request_parser.hpp
#include <boost/beast/http/status.hpp>

namespace gather {

namespace {

/// Status line, Content-Type, `length_line` (Content-Length or Transfer-Encoding; none when
/// empty), X-Request-Id, the reply's headers, the connection header, the blank line; room is
/// reserved for `body_size` bytes after it. The head is written through a pointer into a string
/// sized for the most it can take, then cut: one allocation, no capacity check per piece.
std::string head_bytes(const http_reply& reply, const std::string& request_id,
                       const response_framing& framing, std::string_view length_line,
                       std::size_t body_size) {
  const auto reason = boost::beast::http::obsolete_reason(
      static_cast<boost::beast::http::status>(reply.status));
  // "HTTP/1.1 " and the status's digits; "\r\nContent-Type: " (16), "\r\n" before the length,
  // "\r\nX-Request-Id: " (16), "\r\nConnection: keep-alive" (24), the blank line (4).
  std::size_t most = 9 + 12 + 1 + reason.size() + 16 + reply.content_type.size() + 2 +
                     length_line.size() + 16 + request_id.size() + 24 + 4;
  for (const auto& [name, value] : reply.headers)
    most += 4 + name.size() + value.size();
  std::string out;
  out.reserve(most + body_size);
  out.resize(most);
  char* p = out.data();
  const auto put = [&p](std::string_view piece) {
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  };
  put(framing.version == 10 ? std::string_view{"HTTP/1.0 "} : std::string_view{"HTTP/1.1 "});
  p = std::to_chars(p, p + 12, reply.status).ptr;
  *p++ = ' ';
  put({reason.data(), reason.size()});
  // A 204 has neither a body nor a length (RFC 9110 §8.6).
  if (reply.status != 204) {
    put("\r\nContent-Type: ");
    put(reply.content_type);
  }
  if (!length_line.empty()) {
    put("\r\n");
    put(length_line);
  }
  put("\r\nX-Request-Id: ");
  put(request_id);
  for (const auto& [name, value] : reply.headers) {
    put("\r\n");
    put(name);
    put(": ");
    put(value);
  }
  if (!framing.keep_alive)
    put("\r\nConnection: close");
  else if (framing.version == 10)
    put("\r\nConnection: keep-alive");
  put("\r\n\r\n");
  out.resize(static_cast<std::size_t>(p - out.data()));
  return out;
}

} // namespace

std::string response_bytes(const http_reply& reply, const std::string& request_id,
                           response_framing framing) {
  // "Content-Length: " and the digits, on the stack (as a std::string it was an allocation).
  constexpr std::string_view key = "Content-Length: ";
  char length[key.size() + 20];
  std::memcpy(length, key.data(), key.size());
  const char* end = std::to_chars(length + key.size(), length + sizeof length, reply.body.size()).ptr;
  const bool body = !framing.head_only && reply.status != 204;
  auto out = head_bytes(reply, request_id, framing,
                        reply.status == 204 ? std::string_view{}
                                            : std::string_view{length, static_cast<std::size_t>(end - length)},
                        body ? reply.body.size() : 0);
  if (body)
    out += reply.body;
  return out;
}

std::string stream_head_bytes(const http_reply& head, const std::string& request_id,
                              response_framing framing) {
  // HTTP/1.0 knows no chunks: the body runs to the connection's end (framing.keep_alive is false).
  return head_bytes(head, request_id, framing,
                    framing.version == 10 ? std::string_view{} : std::string_view{"Transfer-Encoding: chunked"}, 0);
}

std::string chunk_bytes(std::string_view piece, int version, bool last) {
  if (version == 10)
    return std::string(piece);
  std::string out;
  out.reserve(piece.size() + 16);
  if (!piece.empty()) {
    char size[20];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    out.append(size, static_cast<std::size_t>(n));
    out += piece;
    out += "\r\n";
  }
  if (last)
    out += "0\r\n\r\n";
  return out;
}

} // namespace gather
