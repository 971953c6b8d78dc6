#include "support/stream_client.hpp"

#include <cerrno>
#include <stdexcept>

#include <poll.h>
#include <unistd.h>

#include "support/ascii_lower.hpp"

namespace gather::test {

stream_client::stream_client(int port, const std::string& request) : conn_(port) {
  sent = steady_clock::now();
  if (!conn_.send(request))
    throw std::runtime_error("stream_client: the request could not be sent");
}

std::string stream_client::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

bool stream_client::fill(steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
  pollfd p{conn_.fd(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count()))) <= 0)
    return false;
  char buf[4096];
  const auto n = ::read(conn_.fd(), buf, sizeof buf);
  if (n <= 0)
    return false;
  if (!got_first_) {
    got_first_ = true;
    first_byte = steady_clock::now();
  }
  buffer_.append(buf, static_cast<std::size_t>(n));
  return true;
}

bool stream_client::read_head(std::chrono::milliseconds limit) {
  const auto deadline = steady_clock::now() + limit;
  std::size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos)
    if (!fill(deadline))
      return false;
  head_at = steady_clock::now();
  const auto line_end = buffer_.find("\r\n");
  status = std::stoi(buffer_.substr(9, 3));
  for (std::size_t at = line_end + 2; at < end;) {
    const auto next = buffer_.find("\r\n", at);
    const auto line = buffer_.substr(at, next - at);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      auto value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      auto& slot = headers[ascii_lower(line.substr(0, colon))];
      slot = slot.empty() ? value : slot + ", " + value;
    }
    at = next + 2;
  }
  buffer_.erase(0, end + 4);
  const auto encoding = header("content-encoding");
  decoder_ = std::make_unique<stream_decoder>(encoding == "gzip" ? content_coding::gzip
                                              : encoding == "br" ? content_coding::br
                                                                 : content_coding::identity);
  if (header("transfer-encoding") != "chunked") { // a whole answer: its Content-Length
    const auto length = std::stoul(header("content-length").empty() ? "0" : header("content-length"));
    while (buffer_.size() < length)
      if (!fill(deadline))
        return false;
    raw_body_ = buffer_.substr(0, length);
    buffer_.erase(0, length);
    ended_ = true;
  }
  return true;
}

std::optional<stream_piece> stream_client::next_chunk(std::chrono::milliseconds limit) {
  const auto deadline = steady_clock::now() + limit;
  while (!ended_) {
    const auto size_end = buffer_.find("\r\n");
    if (size_end != std::string::npos) {
      const auto size = std::stoul(buffer_.substr(0, size_end), nullptr, 16);
      if (size == 0) {
        if (buffer_.size() >= size_end + 4) {
          ended_ = true;
          buffer_.erase(0, size_end + 4);
        } else if (!fill(deadline)) {
          return std::nullopt;
        }
        continue;
      }
      if (buffer_.size() >= size_end + 2 + size + 2) {
        stream_piece piece{decoder_->feed(buffer_.substr(size_end + 2, size)), steady_clock::now()};
        buffer_.erase(0, size_end + 2 + size + 2);
        return piece;
      }
    }
    if (!fill(deadline))
      return std::nullopt;
  }
  return std::nullopt;
}

std::string stream_client::rest(std::chrono::milliseconds limit) {
  std::string out;
  while (auto piece = next_chunk(limit))
    out += piece->bytes;
  return out;
}

std::string get_request(const std::string& target, const std::vector<std::string>& extra) {
  std::string out = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& line : extra)
    out += line + "\r\n";
  return out + "\r\n";
}

long long ms_between(steady_clock::time_point from, steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

} // namespace gather::test
