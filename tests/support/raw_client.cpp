#include "support/raw_client.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/ascii_lower.hpp"

namespace gather::test {

namespace {

using steady = std::chrono::steady_clock;

int remaining_ms(steady::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

/// Parses a response out of the front of `data`; the bytes it took, or 0 when incomplete.
std::size_t parse_response(const std::string& data, raw_response& out) {
  const std::size_t head_end = data.find("\r\n\r\n");
  if (head_end == std::string::npos)
    return 0;
  raw_response r;
  const std::size_t line_end = data.find("\r\n");
  const std::string status_line = data.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12)
    throw std::runtime_error("not an HTTP response: " + status_line);
  r.status = std::stoi(status_line.substr(9, 3));
  std::size_t at = line_end + 2;
  while (at < head_end) {
    const std::size_t end = data.find("\r\n", at);
    const std::string line = data.substr(at, end - at);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[ascii_lower(line.substr(0, colon))] = value;
    }
    at = end + 2;
  }
  std::size_t length = 0;
  if (auto it = r.headers.find("content-length"); it != r.headers.end())
    length = std::stoul(it->second);
  if (data.size() < head_end + 4 + length)
    return 0;
  r.body = data.substr(head_end + 4, length);
  out = std::move(r);
  return head_end + 4 + length;
}

} // namespace

std::string raw_response::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string{} : it->second;
}

raw_connection::raw_connection(int port) : raw_connection(port, {}) {}

raw_connection::raw_connection(int port, const std::string& from) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0)
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  if (!from.empty()) { // another loopback source address: the gateway sees another peer
    sockaddr_in source{};
    source.sin_family = AF_INET;
    if (::inet_pton(AF_INET, from.c_str(), &source.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("bind " + from + ": " + std::strerror(err));
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(std::string("connect: ") + std::strerror(err));
  }
  const int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

raw_connection::~raw_connection() { close(); }

bool raw_connection::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<raw_response> raw_connection::read_response(std::chrono::milliseconds limit) {
  const auto deadline = steady::now() + limit;
  for (;;) {
    raw_response r;
    if (const std::size_t used = parse_response(buffered_, r)) {
      buffered_.erase(0, used);
      return r;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready <= 0)
      return std::nullopt;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0)
      return std::nullopt;
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

std::string raw_connection::read_at_least(std::size_t n, std::chrono::milliseconds limit) {
  const auto deadline = steady::now() + limit;
  while (buffered_.size() < n) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0)
      break;
    char chunk[65536];
    const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got <= 0)
      break;
    buffered_.append(chunk, static_cast<std::size_t>(got));
  }
  return std::exchange(buffered_, {});
}

bool raw_connection::wait_closed(std::chrono::milliseconds limit) {
  const auto deadline = steady::now() + limit;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready <= 0)
      return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
      return true;
    if (n > 0)
      buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool raw_connection::closed_now() {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0)
    return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP))
    return true;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void raw_connection::reset() {
  if (fd_ < 0)
    return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

void raw_connection::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

bool valid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    unsigned min = 0;
    unsigned cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size())
      return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += extra + 1;
  }
  return true;
}

std::string get_head(const std::string& target, const std::string& extra_headers, const std::string& version) {
  return "GET " + target + " " + version + "\r\nHost: gw\r\n" + extra_headers + "\r\n";
}

} // namespace gather::test
