// Load: 1000 connections at once on a fresh process, and 10000 idle keep-alive connections.
//
// The event-driven front (include/gather/front/) against real gateways over real loopback
// sockets: HTTP/1.0 framing, the keep-alive idle timeout, Expect: 100-continue, inbound TLS,
// max_connections, a burst of 1,000 connections on a fresh process, 10,000 idle connections, and
// the config keys behind it all. Timing margins hold on a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/ascii_lower.hpp"
#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"
#include "front/front_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::front_support;

namespace {

/// `gather serve` on a config, with the port it printed.
struct gather_process {
  child_process child;
  int port = 0;
  explicit gather_process(const json& cfg) : child(binary, {"serve", "--config", temp_file(cfg.dump())}) {
    auto line = child.wait_for_line("listening on");
    REQUIRE(line);
    port = port_of(*line);
  }
};

/// Threads of process `pid` now (/proc/<pid>/task entries).
int threads_of(pid_t pid) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
    ++n;
  return n;
}

/// Resident memory of process `pid` in KiB (/proc/<pid>/status VmRSS).
long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return -1;
}

/// Raises this process's soft descriptor limit to its hard limit (children inherit it); the
/// soft limit now.
rlim_t raise_fd_limit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

/// A non-blocking socket connecting to 127.0.0.1:port (connect in progress); -1 on failure.
int connect_nonblocking(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Closes descriptors when it goes.
struct fd_set_guard {
  std::vector<int> fds;
  ~fd_set_guard() {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
};

/// The status of the complete Content-Length response at the front of `data`; 0 while it is
/// incomplete, -1 when it is not HTTP.
int complete_status(const std::string& data) {
  const auto head_end = data.find("\r\n\r\n");
  if (head_end == std::string::npos)
    return 0;
  if (data.rfind("HTTP/1.", 0) != 0 || head_end < 12)
    return -1;
  const std::string head = gather::test::ascii_lower(data.substr(0, head_end + 2));
  std::size_t length = 0;
  if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::stoul(head.substr(at + 17));
  if (data.size() < head_end + 4 + length)
    return 0;
  return std::stoi(data.substr(9, 3));
}

/// Opens `count` connections to `port` at once, sends `request` on each as soon as it is
/// connected, and polls them all until each has a complete response or `limit` passes.
/// `between_polls` runs after every poll round. Returns each connection's status (0: none).
std::vector<int> burst(int port, int count, const std::string& request, milliseconds limit,
                       const std::function<void()>& between_polls) {
  struct one {
    int fd = -1;
    bool connected = false;
    std::size_t sent = 0;
    std::string in;
    int status = 0;
    bool done = false;
  };
  std::vector<one> all(static_cast<std::size_t>(count));
  fd_set_guard guard;
  for (auto& c : all) {
    c.fd = connect_nonblocking(port);
    guard.fds.push_back(c.fd);
    c.done = c.fd < 0;
  }
  const auto deadline = clock_type::now() + limit;
  std::vector<pollfd> fds;
  std::vector<one*> owners;
  for (;;) {
    fds.clear();
    owners.clear();
    for (auto& c : all) {
      if (c.done)
        continue;
      const bool want_write = !c.connected || c.sent < request.size();
      fds.push_back({c.fd, static_cast<short>(want_write ? POLLOUT : POLLIN), 0});
      owners.push_back(&c);
    }
    if (fds.empty() || clock_type::now() >= deadline)
      break;
    ::poll(fds.data(), fds.size(), 50);
    for (std::size_t i = 0; i < fds.size(); ++i) {
      auto& c = *owners[i];
      const short ev = fds[i].revents;
      if (!ev)
        continue;
      if (!c.connected) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          c.done = true;
          continue;
        }
        c.connected = true;
      }
      if (c.sent < request.size()) {
        const ssize_t n = ::send(c.fd, request.data() + c.sent, request.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0)
          c.sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
          c.done = true;
        continue;
      }
      char chunk[16384];
      for (;;) {
        const ssize_t n = ::recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n > 0) {
          c.in.append(chunk, static_cast<std::size_t>(n));
          continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
          c.done = true; // closed: the status is whatever arrived complete
        break;
      }
      if (const int status = complete_status(c.in)) {
        c.status = status;
        c.done = true;
      }
    }
    if (between_polls)
      between_polls();
  }
  std::vector<int> statuses;
  for (const auto& c : all)
    statuses.push_back(c.status);
  return statuses;
}

/// One request on an already connected socket `fd`; the status of its answer (0: none within
/// `limit`). Bytes past the answer are not expected (one request in flight).
int request_on(int fd, const std::string& request, milliseconds limit = milliseconds{5000}) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return 0;
  const auto deadline = clock_type::now() + limit;
  std::string in;
  while (clock_type::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 0))) <= 0)
      continue;
    char chunk[16384];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return 0;
    if (n > 0)
      in.append(chunk, static_cast<std::size_t>(n));
    if (const int status = complete_status(in))
      return status;
  }
  return 0;
}

} // namespace

// ---- 6. 1,000 connections at once on a fresh process ---------------------------------------------

TEST_CASE("a fresh gather serve answers 1000 connections opened at once, on a constant set of threads", "[front][load]") {
  REQUIRE(raise_fd_limit() >= 4096); // 1,000 clients + the downstreams' 2,000 (test and gateway)
  // A required section that answers at once, an optional one that never does (fallback at 200 ms).
  test_server fast{128};
  fast.raw().set_keep_alive_max_count(1); // a worker freed after each answer, whatever curl keeps
  fast.get("/ok", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"ok":1})", "application/json");
  });
  fast.start();
  silent_server hung;
  json cfg = {{"listen", "127.0.0.1:0"},
              {"max_inflight", 4096},
              {"routes",
               {{{"path", "/p"},
                 {"deadline_ms", 1000},
                 {"sections",
                  {section("fast", fast.base_url() + "/ok", 1000, {{"required", true}}),
                   section("slow", hung.base_url() + "/x", 200, {{"fallback", json::object()}})}}}}}};
  gather_process gw{cfg};
  const pid_t pid = gw.child.pid();
  const int threads_before = threads_of(pid);
  int threads_most = threads_before, threads_least = threads_before;

  const auto start = clock_type::now();
  const auto statuses = burst(gw.port, 1000, get_head("/p"), milliseconds{10000}, [&] {
    const int now = threads_of(pid);
    threads_most = std::max(threads_most, now);
    threads_least = std::min(threads_least, now);
  });
  const auto took = ms_since(start);
  const int threads_after = threads_of(pid);
  const auto ok = std::count(statuses.begin(), statuses.end(), 200);
  const auto none = std::count(statuses.begin(), statuses.end(), 0);
  WARN("1000 connections at once: " << ok << " answered 200, " << none << " unanswered, in " << took
                                    << " ms; gateway threads before " << threads_before << ", during "
                                    << threads_least << ".." << threads_most << ", after " << threads_after);
  std::map<int, int> by_status;
  for (int status : statuses)
    ++by_status[status];
  for (const auto& [status, n] : by_status)
    UNSCOPED_INFO("status " << status << ": " << n);
  CHECK(ok == 1000);
  CHECK(threads_before <= 16);
  CHECK(threads_most == threads_before);
  CHECK(threads_least == threads_before);
  CHECK(threads_after == threads_before);
  gw.child.signal(SIGTERM);
  CHECK(gw.child.wait_exit(std::chrono::seconds(10)) == 0);
  if (ok != 1000) { // what the gateway logged for the others
    std::stringstream log{gw.child.err()};
    std::string line;
    int shown = 0;
    while (std::getline(log, line) && shown < 5)
      if (line.find("\"status\":200") == std::string::npos && line.rfind("{", 0) == 0) {
        WARN(line.substr(0, 600));
        ++shown;
      }
  }
}

// ---- 7. 10,000 idle keep-alive connections -------------------------------------------------------

TEST_CASE("10000 idle keep-alive connections cost little memory and no threads, and a new one is served", "[front][load]") {
  constexpr int idle = 10000;
  REQUIRE(raise_fd_limit() >= idle + 200);
  front_downstream down;
  down.server.raw().set_keep_alive_max_count(100000);
  down.server.start();
  gather_process gw{front_config(down.base_url(), {{"max_connections", idle + 100},
                                                    {"keep_alive_idle_ms", 120000},
                                                    {"max_inflight", 1024}})};
  const pid_t pid = gw.child.pid();

  // The probe: a connection of its own for /debug/actors, open throughout (so counted).
  raw_connection probe{gw.port};
  for (int i = 0; i < 3; ++i) { // warm: the first requests allocate what every request reuses
    REQUIRE(probe.send(get_head("/p")));
    auto r = probe.read_response();
    REQUIRE(r);
    check_p_answer(*r);
  }
  const auto connections_now = [&]() -> long long {
    auto stats = debug_actors(probe);
    return stats ? stats->value("connections", -1LL) : -1;
  };
  REQUIRE(connections_now() == 1);
  const long rss_before = rss_kib(pid);
  const int threads_before = threads_of(pid);

  // Open them in steps well inside the listen backlog (4096), each step accepted before the next.
  const auto start = clock_type::now();
  fd_set_guard conns;
  constexpr int step = 1000;
  while (static_cast<int>(conns.fds.size()) < idle) {
    std::vector<pollfd> pending;
    for (int i = 0; i < step; ++i) {
      const int fd = connect_nonblocking(gw.port);
      if (fd < 0)
        break;
      conns.fds.push_back(fd);
      pending.push_back({fd, POLLOUT, 0});
    }
    REQUIRE(pending.size() == static_cast<std::size_t>(step));
    const auto step_deadline = clock_type::now() + std::chrono::seconds(10);
    std::size_t connected = 0, failed = 0;
    while (connected + failed < pending.size() && clock_type::now() < step_deadline) {
      ::poll(pending.data(), pending.size(), 100);
      for (auto& p : pending) {
        if (p.fd >= 0 && p.revents) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len);
          ++(err == 0 ? connected : failed);
          p.fd = -1; // poll ignores it from now on
        }
      }
    }
    REQUIRE(connected == pending.size());
    const long long expected = static_cast<long long>(conns.fds.size()) + 1;
    REQUIRE(eventually([&] { return connections_now() == expected; }, std::chrono::seconds(10)));
  }
  const auto opened_in = ms_since(start);

  // One request on every 100th of them.
  int sampled = 0, sampled_ok = 0;
  for (std::size_t i = 0; i < conns.fds.size(); i += 100, ++sampled)
    sampled_ok += request_on(conns.fds[i], get_head("/p")) == 200;
  CHECK(sampled_ok == sampled);

  const long rss_after = rss_kib(pid);
  const int threads_after = threads_of(pid);
  const double per_connection_kib = static_cast<double>(rss_after - rss_before) / idle;
  REQUIRE(connections_now() == idle + 1);

  // Connection number 10,001 (10,002 with the probe) is served too.
  raw_connection newest{gw.port};
  REQUIRE(newest.send(get_head("/p")));
  auto r = newest.read_response();
  REQUIRE(r);
  check_p_answer(*r);

  WARN(idle << " idle connections opened in " << opened_in << " ms; gateway RSS " << rss_before
            << " KiB -> " << rss_after << " KiB: " << per_connection_kib
            << " KiB per connection; threads " << threads_before << " -> " << threads_after << "; "
            << sampled_ok << "/" << sampled << " sampled requests answered 200");
  CHECK(threads_after == threads_before);
  CHECK(per_connection_kib < 32.0);

  // SIGTERM with all of them open: idle connections close at once and the process exits 0.
  // (The gateway closing first also leaves the TIME_WAITs on its side, not 10,000 of this
  // machine's ephemeral ports held for a minute.)
  const auto drain_start = clock_type::now();
  gw.child.signal(SIGTERM);
  CHECK(gw.child.wait_exit(std::chrono::seconds(10)) == 0);
  const auto drained_in = ms_since(drain_start);
  WARN("SIGTERM with " << idle + 2 << " idle connections: exited in " << drained_in << " ms");
  CHECK(drained_in < 5000);
  CHECK(newest.wait_closed(milliseconds{1000}));
  for (std::size_t i = 0; i < conns.fds.size(); i += 1000) {
    bool closed = false;
    read_until_closed(conns.fds[i], milliseconds{1000}, closed);
    CHECK(closed);
  }
}
