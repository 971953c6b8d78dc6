// A store that is not what it should be (docs/shared.md, "When the store fails"): a fake Redis
// that answers PING, then answers every other command wrongly. Each answer ends as a store error,
// and the gateway keeps serving.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/shared_fixture.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {

enum class hostility { wrong_type, huge_bulk, silent, closes_mid_reply };

/// Accepts connections one after another on 127.0.0.1; answers +PONG to a connection's first
/// read, then behaves as `how` to every later one.
class hostile_redis {
public:
  explicit hostile_redis(hostility how) : how_(how) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_, 8) == 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~hostile_redis() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
  bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 50) > 0;
  }
  void send_all(int fd, const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size() && !stop_) {
      const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        return;
      sent += static_cast<std::size_t>(n);
    }
  }
  void serve() {
    while (!stop_) {
      if (!readable(listener_))
        continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0)
        continue;
      bool greeted = false;
      bool line_start = true; // the last byte ended a line: the next may start a command
      char buffer[65536];
      while (!stop_) {
        if (!readable(fd))
          continue;
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        // The commands that began in this read (several leave in one write when the gateway
        // pipelines them): one wrong answer each, so that every command meets one.
        int commands = 0;
        for (ssize_t i = 0; i < n; ++i) {
          if (line_start && buffer[i] == '*')
            ++commands;
          line_start = buffer[i] == '\n';
        }
        if (!greeted) {
          greeted = true;
          send_all(fd, "+PONG\r\n");
          continue;
        }
        if (how_ == hostility::wrong_type)
          for (int i = 0; i < commands; ++i)
            send_all(fd, "+OK\r\n");
        else if (how_ == hostility::huge_bulk)
          send_all(fd, "$20000000\r\n" + std::string(17u << 20, 'x'));
        else if (how_ == hostility::closes_mid_reply) {
          send_all(fd, "*3\r\n:1\r\n$5\r\nab");
          break;
        }
        // silent: reads and never answers
      }
      ::close(fd);
    }
  }
  hostility how_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace

TEST_CASE("shared: a hostile store ends as store errors and the gateway keeps serving", "[shared][hostile_store]") {
  test_server down;
  serve_empty_object(down);
  down.start();
  // What each ends as: an error answer or a broken connection (error), no answer (timeout), or
  // either (a 17 MiB answer takes many reads, and may pass timeout_ms before it passes 16 MiB).
  const auto [how, counted_as] = GENERATE(table<hostility, std::string>({
      {hostility::wrong_type, "error"},
      {hostility::huge_bulk, "any"},
      {hostility::silent, "timeout"},
      {hostility::closes_mid_reply, "error"},
  }));
  // Approximate mode (the syncs meet the store) and exact mode (every request's decision does).
  const int sync_ms = GENERATE(20, 0);
  const std::string op = sync_ms == 0 ? "limit" : "sync";
  hostile_redis fake(how);
  served_gateway gw(limited_gateway_config(down, {{"redis", fake.url()}, {"timeout_ms", 50}, {"sync_ms", sync_ms}},
                                           {{"per", "ip"}, {"rate_per_s", 1000000}, {"shared", true}}));
  auto failed = [&](const char* result) {
    return gw.metric(R"(gather_shared_ops_total{op=")" + op + R"(",result=")" + result + "\"}");
  };
  // Requests keep the syncs going; each is answered whatever the store does.
  const bool seen = eventually([&] {
    REQUIRE(gw.status() == 200);
    const long errors = failed("error"), timeouts = failed("timeout");
    return counted_as == "error" ? errors >= 2 : counted_as == "timeout" ? timeouts >= 2 : errors + timeouts >= 2;
  }, std::chrono::seconds(10));
  INFO("sync_ms " << sync_ms << ", counted as " << counted_as << ": " << op << " errors " << failed("error") << ", timeouts " << failed("timeout"));
  CHECK(seen);
  CHECK(failed("ok") == 0); // not one answer was taken for a good one
  CHECK(gw.status() == 200);
  CHECK(eventually([&] { return gw.shared_up() == false; }));
}
