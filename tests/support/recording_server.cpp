#include "support/recording_server.hpp"

#include <algorithm>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gather::test {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

/// Reads into `buffer` until it holds `want` bytes or the peer goes; false when it went first.
bool read_until(int fd, std::string& buffer, const std::function<bool()>& enough) {
  char chunk[16384];
  while (!enough()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0)
      return false;
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0)
      return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

/// Whether the peer has closed its side (checked now; unread data stays).
bool peer_closed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0)
    return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
    return true;
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

} // namespace

std::string recorded_request::header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name)
      return value;
  return {};
}

int recorded_request::count(const std::string& lower_name) const {
  return static_cast<int>(std::count_if(headers.begin(), headers.end(),
                                        [&](const auto& h) { return h.first == lower_name; }));
}

recording_server::recording_server(responder respond) : respond_(std::move(respond)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 128) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("recording_server: cannot listen");
  port_ = ntohs(addr.sin_port);
  threads_.emplace_back([this] {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0)
        continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0)
        continue;
      std::lock_guard lock(mutex_);
      fds_.push_back(fd);
      threads_.emplace_back([this, fd] { serve(fd); });
    }
  });
}

recording_server::~recording_server() {
  stopping_ = true;
  threads_.front().join(); // no thread is added after the acceptor stopped
  {
    std::lock_guard lock(mutex_);
    for (const int fd : fds_)
      ::shutdown(fd, SHUT_RDWR);
  }
  for (std::size_t i = 1; i < threads_.size(); ++i)
    threads_[i].join();
  for (const int fd : fds_)
    ::close(fd);
  ::close(listen_fd_);
}

std::vector<recorded_request> recording_server::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void recording_server::serve(int fd) {
  std::string buffer;
  while (!stopping_) {
    std::size_t head_end = std::string::npos;
    if (!read_until(fd, buffer, [&] { return (head_end = buffer.find("\r\n\r\n")) != std::string::npos; }))
      return;
    recorded_request request;
    const std::string head = buffer.substr(0, head_end);
    std::size_t at = head.find("\r\n");
    const std::string line = head.substr(0, at);
    request.method = line.substr(0, line.find(' '));
    request.target = line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1);
    std::size_t length = 0;
    while (at != std::string::npos && at < head.size()) {
      const auto next = head.find("\r\n", at + 2);
      const auto field = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
      const auto colon = field.find(':');
      auto value = field.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      request.headers.emplace_back(lower(field.substr(0, colon)), value);
      if (lower(field.substr(0, colon)) == "content-length")
        length = std::stoul(value);
      at = next;
    }
    buffer.erase(0, head_end + 4);
    if (!read_until(fd, buffer, [&] { return buffer.size() >= length; }))
      return;
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);
    const auto answer = respond_(request);
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    for (auto waited = std::chrono::milliseconds{0}; waited < answer.delay && !stopping_;
         waited += std::chrono::milliseconds{5})
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    if (peer_closed(fd)) {
      ++abandoned_;
      return;
    }
    std::string bytes = "HTTP/1.1 " + std::to_string(answer.status) + " X\r\n";
    if (answer.status != 204)
      bytes += (answer.body.empty() ? "" : "Content-Type: application/json\r\n") +
               std::string("Content-Length: ") + std::to_string(answer.body.size()) + "\r\n";
    bytes += "\r\n";
    if (answer.status != 204)
      bytes += answer.body;
    if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size()))
      return;
    ++completed_;
  }
}

} // namespace gather::test
