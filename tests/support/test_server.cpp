#include "support/test_server.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>
#include <stdexcept>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {
// A test process writes to sockets its peer may have closed (raw clients, hostile servers): that
// write must fail, not end the test binary. The gateway's own sockets never raise SIGPIPE.
const bool sigpipe_ignored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();
} // namespace

namespace gather::test {

namespace {

// Deep enough that a burst of connections (thousands of transfers in one test) is not dropped
// and retried a second later by the client's SYN retransmission.
constexpr int listen_backlog = 4096;

std::string loopback_url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

sockaddr_in loopback_address(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// A full HTTP round trip: a bare connect succeeds as soon as the socket listens (the kernel
// queues it), and is_running() turns true before httplib has created its handler pool.
// OPTIONS reaches no GET handler, so it does not show up in calls().
bool answers_http(int port, const std::string& host = "127.0.0.1") {
  httplib::Client probe(host, port);
  probe.set_connection_timeout(1);
  probe.set_read_timeout(1);
  return static_cast<bool>(probe.Options("*"));
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

} // namespace

// ---- test_server ----

test_server::test_server(std::size_t threads) : threads_(threads) {
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Without it Nagle and delayed ACKs add ~40 ms to every response.
  server_.set_tcp_nodelay(true);
}

test_server::~test_server() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stopping_cv_.notify_all();
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

test_server& test_server::get(const std::string& pattern, handler h) {
  server_.Get(pattern, [this, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    struct active_guard {
      std::atomic<int>& active;
      ~active_guard() { --active; }
    };
    ++calls_;
    const int now_active = ++active_;
    active_guard guard{active_};
    int seen = max_active_.load();
    while (now_active > seen && !max_active_.compare_exchange_weak(seen, now_active)) {
    }
    h(req, res);
  });
  return *this;
}

void test_server::start() { start_on("127.0.0.1"); }

void test_server::start_on(const std::string& host, int port) {
  // httplib listens with a backlog of 5; catch its socket while binding to deepen that.
  // (The server keeps the callback, so it owns what it writes to.)
  auto listen_fd = std::make_shared<int>(-1);
  server_.set_socket_options([listen_fd](socket_t fd) {
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on); // httplib's default option
    *listen_fd = fd;
  });
  host_ = host;
  port_ = port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
  if (port_ < 0) fail("test_server: bind");
  if (::listen(*listen_fd, listen_backlog) != 0) fail("test_server: listen");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  if (!eventually([this] { return server_.is_running() && answers_http(port_, host_); }, std::chrono::seconds(10)))
    throw std::runtime_error("test_server: did not start");
}

std::string test_server::base_url() const { return loopback_url(port_); }

void test_server::hang(std::chrono::milliseconds max) {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_cv_.wait_for(lock, max, [this] { return stopping_; });
}

void test_server::delay(std::chrono::milliseconds d) { hang(d); }

int listen_on_loopback(int backlog, int& port, int flags) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  if (fd < 0) fail("listen_on_loopback: socket");
  sockaddr_in addr = loopback_address(0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    fail("listen_on_loopback: bind");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

// ---- silent_server ----

silent_server::silent_server(int silent, std::string response)
  : silent_(silent), response_(std::move(response)) {
  start();
}

silent_server::silent_server() {
  start();
}

void silent_server::start() {
  fd_ = listen_on_loopback(listen_backlog, port_, SOCK_NONBLOCK);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) fail("silent_server: eventfd");

  thread_ = std::thread([this] {
    // [0] wakes us for shutdown, [1] is the listening socket, the rest are connections.
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}, {fd_, POLLIN, 0}};
    std::set<int> answering; // connections past the first `silent_`
    char discard[4096];
    while (!stop_.load()) {
      if (::poll(fds.data(), fds.size(), -1) < 0) continue; // EINTR
      for (std::size_t i = fds.size() - 1; i >= 2; --i) {
        if (!fds[i].revents) continue;
        const ssize_t n = ::read(fds[i].fd, discard, sizeof discard);
        if (n > 0 && answering.count(fds[i].fd))
          (void)!::write(fds[i].fd, response_.data(), response_.size());
        if (n > 0 || (n < 0 && errno == EAGAIN)) continue;
        answering.erase(fds[i].fd);
        ::close(fds[i].fd);
        ++closed_;
        fds[i] = fds.back();
        fds.pop_back();
      }
      if (fds[1].revents & POLLIN) {
        while (true) {
          const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (conn < 0) break;
          fds.push_back({conn, POLLIN, 0});
          if (silent_ >= 0 && accepted_.load() >= silent_)
            answering.insert(conn);
          ++accepted_;
        }
      }
    }
    for (std::size_t i = 2; i < fds.size(); ++i) ::close(fds[i].fd);
  });
}

silent_server::~silent_server() {
  stop_ = true;
  ::eventfd_write(wake_fd_, 1);
  thread_.join();
  ::close(wake_fd_);
  ::close(fd_);
}

std::string silent_server::base_url() const { return loopback_url(port_); }

std::string raw_json_response(const std::string& json_body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(json_body.size()) + "\r\n\r\n" + json_body;
}

// ---- eventually ----

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

} // namespace gather::test
