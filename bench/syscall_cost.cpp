// What one system call of the loop's kinds costs on this machine, hot, without any I/O: a recv that
// finds nothing (Asio's speculative read), an epoll_wait that does not sleep (the scheduler's poll
// between handlers), and the EPOLL_CTL_MOD that Asio 1.81 makes for every async_wait. Sets the
// price of the loop's extra calls (docs/performance.md).
//
//   cmake --build build --target syscall_cost && build/bench/syscall_cost [N]
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

template <class F>
double ns_each(long n, F&& call) {
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i)
    call();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / n;
}

} // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) != 0)
    return std::perror("socketpair"), 1;
  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pair[0], &ev) != 0)
    return std::perror("epoll"), 1;
  char buffer[512];
  epoll_event events[128];
  std::printf("recv finding nothing (EAGAIN): %.0f ns\n", ns_each(n, [&] { (void)recv(pair[0], buffer, sizeof buffer, 0); }));
  std::printf("epoll_wait, timeout 0:         %.0f ns\n", ns_each(n, [&] { (void)epoll_wait(ep, events, 128, 0); }));
  std::printf("epoll_ctl EPOLL_CTL_MOD:       %.0f ns\n", ns_each(n, [&] { (void)epoll_ctl(ep, EPOLL_CTL_MOD, pair[0], &ev); }));
  close(ep);
  close(pair[0]);
  close(pair[1]);
}
