#include "gather/front/response_bytes.hpp"

#include <ostream> // see request_parser.hpp
#include <boost/beast/http/status.hpp>

namespace gather {

std::string response_bytes(const http_reply& reply, const std::string& request_id,
                           response_framing framing) {
  const auto reason = boost::beast::http::obsolete_reason(
      static_cast<boost::beast::http::status>(reply.status));
  std::string out;
  out.reserve(160 + reply.body.size());
  out += framing.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(reply.status);
  out += ' ';
  out.append(reason.data(), reason.size());
  out += "\r\nContent-Type: ";
  out += reply.content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(reply.body.size());
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
  if (!framing.head_only)
    out += reply.body;
  return out;
}

} // namespace gather
