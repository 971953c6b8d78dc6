#include "gather/front/response_bytes.hpp"

#include <cstdio>
#include <ostream> // see request_parser.hpp
#include <boost/beast/http/status.hpp>

namespace gather {

namespace {

/// Status line, Content-Type, `length_line` (Content-Length or Transfer-Encoding; none when
/// empty), X-Request-Id, the reply's headers, the connection header, the blank line.
std::string head_bytes(const http_reply& reply, const std::string& request_id,
                       const response_framing& framing, const std::string& length_line,
                       std::size_t body_size) {
  const auto reason = boost::beast::http::obsolete_reason(
      static_cast<boost::beast::http::status>(reply.status));
  std::string out;
  out.reserve(160 + body_size);
  out += framing.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(reply.status);
  out += ' ';
  out.append(reason.data(), reason.size());
  // A 204 has neither a body nor a length (RFC 9110 §8.6).
  if (reply.status != 204) {
    out += "\r\nContent-Type: ";
    out += reply.content_type;
  }
  if (!length_line.empty()) {
    out += "\r\n";
    out += length_line;
  }
  out += "\r\nX-Request-Id: ";
  out += request_id;
  for (const auto& [name, value] : reply.headers) {
    out += "\r\n";
    out += name;
    out += ": ";
    out += value;
  }
  if (!framing.keep_alive)
    out += "\r\nConnection: close";
  else if (framing.version == 10)
    out += "\r\nConnection: keep-alive";
  out += "\r\n\r\n";
  return out;
}

} // namespace

std::string response_bytes(const http_reply& reply, const std::string& request_id,
                           response_framing framing) {
  auto out = head_bytes(reply, request_id, framing,
                        reply.status == 204 ? std::string{} : "Content-Length: " + std::to_string(reply.body.size()),
                        reply.body.size());
  if (!framing.head_only && reply.status != 204)
    out += reply.body;
  return out;
}

std::string stream_head_bytes(const http_reply& head, const std::string& request_id,
                              response_framing framing) {
  // HTTP/1.0 knows no chunks: the body runs to the connection's end (framing.keep_alive is false).
  return head_bytes(head, request_id, framing,
                    framing.version == 10 ? std::string{} : "Transfer-Encoding: chunked", 0);
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
