#include "gather/reply_channel.hpp"

#include <cerrno>
#include <cstdint>
#include <poll.h>
#include <stdexcept>
#include <sys/eventfd.h>
#include <unistd.h>

namespace gather {

reply_channel::reply_channel() : event_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (event_fd_ < 0)
    throw std::runtime_error("eventfd failed");
}

reply_channel::~reply_channel() {
  ::close(event_fd_);
}

void reply_channel::deliver(http_reply reply) {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (reply_)
      return;
    reply_ = std::move(reply);
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
}

reply_channel::outcome reply_channel::wait(int client_fd, std::chrono::steady_clock::time_point limit) {
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {client_fd, POLLRDHUP, 0}};
  const nfds_t count = client_fd >= 0 ? 2 : 1;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      limit - std::chrono::steady_clock::now());
    if (left.count() < 0)
      left = std::chrono::milliseconds{0};
    int n = ::poll(fds, count, static_cast<int>(left.count()) + 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (fds[0].revents & POLLIN)
      return outcome::replied;
    // A hang-up (FIN or RST) from the client; a pipelined next request is only POLLIN, not watched.
    if (count == 2 && (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
      return outcome::client_gone;
    if (std::chrono::steady_clock::now() >= limit)
      return outcome::timed_out;
  }
}

http_reply reply_channel::take() {
  std::lock_guard<std::mutex> guard{mutex_};
  return reply_ ? std::move(*reply_) : http_reply{};
}

} // namespace gather
