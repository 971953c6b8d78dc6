// The HTTP/2 pool under churn (link_machine.hpp): callers that go away with calls in flight, then
// new ones at once. Against a real nginx over h2c (http2_max_concurrent_streams 128, a handler
// that runs 20 ms whatever the client does: nginx counts a reset stream until it ends) and
// against h2_server.py holding reset streams 200 ms: no call may end by its timeout, none may
// fail, and the server refuses no stream. Also a link going quiet after GOAWAY: its calls end as a
// connection failure after downstream_drain_quiet_ms, not at their timeout; and the pools' idle
// bound, downstream_idle_timeout_ms, over HTTP/1.1 and HTTP/2.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"

#include "support/child_process.hpp"
#include "support/h2_downstream_server.hpp"
#include "support/ports.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using namespace gather;

namespace {

const std::string nginx_program = "/usr/sbin/nginx";
const std::string echo_module = "/usr/lib/nginx/modules/ngx_http_echo_module.so";

bool can_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

/// nginx over h2c in a temporary prefix of its own (config, pid, logs, temp paths), as a child.
struct nginx_h2c {
  std::string dir;
  int port = 0;
  std::unique_ptr<test::child_process> process;

  nginx_h2c() {
    char path[] = "/tmp/gather-nginx-XXXXXX";
    REQUIRE(::mkdtemp(path) != nullptr);
    dir = path;
    port = test::unused_port();
    std::ofstream conf(dir + "/nginx.conf");
    conf << "load_module " << echo_module << ";\n"
         << "worker_processes 1;\ndaemon off;\npid " << dir << "/nginx.pid;\n"
         << "error_log " << dir << "/error.log info;\n"
         << "events { worker_connections 4096; }\n"
         << "http {\n  access_log off;\n  default_type application/json;\n"
         << "  keepalive_requests 1000000;\n"
         << "  client_body_temp_path " << dir << "/tmp;\n  proxy_temp_path " << dir << "/tmp;\n"
         << "  fastcgi_temp_path " << dir << "/tmp;\n  uwsgi_temp_path " << dir << "/tmp;\n"
         << "  scgi_temp_path " << dir << "/tmp;\n"
         << "  server {\n    listen 127.0.0.1:" << port << " http2;\n"
         << "    http2_max_concurrent_streams 128;\n"
         << "    location = /d20 { echo_sleep 0.020; echo '{\"id\":1}'; }\n  }\n}\n";
    conf.close();
    process = std::make_unique<test::child_process>(
        nginx_program, std::vector<std::string>{"-p", dir, "-e", dir + "/error.log", "-c", dir + "/nginx.conf"});
    for (int i = 0; i < 500 && !can_connect(port); ++i)
      std::this_thread::sleep_for(10ms);
    REQUIRE(can_connect(port));
  }
  ~nginx_h2c() {
    // TERM, not the child's KILL: nginx's master then stops its worker, which holds the pipes.
    process->signal(SIGTERM);
    process->wait_exit(5s);
    process.reset();
    std::system(("rm -rf '" + dir + "'").c_str());
  }
  /// Lines of nginx's error log (at info) that contain `needle`.
  int log_lines_with(const std::string& needle) const {
    std::ifstream log(dir + "/error.log");
    int n = 0;
    for (std::string line; std::getline(log, line);)
      n += line.find(needle) != std::string::npos;
    return n;
  }
};

/// What a round of transfers ended with.
struct churn_tally {
  std::mutex mutex;
  int ok = 0, timeouts = 0, failures = 0;
  std::vector<std::string> failed;
  void add(const transfer_result& r) {
    std::lock_guard lock(mutex);
    if (r.error == transfer_error::none && r.http_status == 200)
      ++ok;
    else if (r.error == transfer_error::timeout)
      ++timeouts;
    else
      ++failures;
    if (!(r.error == transfer_error::none && r.http_status == 200) && failed.size() < 5)
      failed.push_back(r.detail);
  }
};

/// `n` http2 transfers of `url`; their ids (to cancel them).
std::vector<std::uint64_t> submit_round(downstream_client& client, const std::string& url, int n,
                                        std::chrono::milliseconds timeout, const std::shared_ptr<churn_tally>& tally,
                                        const std::shared_ptr<std::atomic<int>>& done) {
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    transfer_request request{url, "X-Client: churn\r\n", timeout};
    request.http2 = true;
    ids.push_back(client.submit(std::move(request), [tally, done](transfer_result&& r) {
      tally->add(r);
      ++*done;
    }));
  }
  return ids;
}

/// Waits (bounded) until `done` reaches `n`.
bool all_done(const std::atomic<int>& done, int n, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (done.load() < n && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  return done.load() >= n;
}

/// Ten cycles: `clients` callers of `per_client` calls each go away with their calls in flight,
/// then as many new ones call and must all be answered.
void churn(downstream_client& client, const std::string& url, int calls, std::chrono::milliseconds in_flight,
           churn_tally& result) {
  for (int cycle = 0; cycle < 10; ++cycle) {
    auto gone = std::make_shared<churn_tally>();
    auto gone_done = std::make_shared<std::atomic<int>>(0);
    const auto ids = submit_round(client, url, calls, 2s, gone, gone_done);
    std::this_thread::sleep_for(in_flight); // the calls are on the wire (a wait, not a sync)
    for (const auto id : ids)
      client.cancel(id);
    auto fresh = std::make_shared<churn_tally>();
    auto fresh_done = std::make_shared<std::atomic<int>>(0);
    submit_round(client, url, calls, 2s, fresh, fresh_done);
    REQUIRE(all_done(*fresh_done, calls, 5s));
    std::lock_guard lock(fresh->mutex);
    result.ok += fresh->ok;
    result.timeouts += fresh->timeouts;
    result.failures += fresh->failures;
    for (auto& f : fresh->failed)
      if (result.failed.size() < 5)
        result.failed.push_back(f);
  }
}

} // namespace

TEST_CASE("HTTP/2 churn against nginx h2c: no call lost, no stream refused", "[h2-downstream][h2-churn]") {
  if (::access(nginx_program.c_str(), X_OK) != 0 || ::access(echo_module.c_str(), R_OK) != 0) {
    WARN("skipped: " + nginx_program + " or " + echo_module +
         " is missing (apt-get install nginx-light libnginx-mod-http-echo)");
    return;
  }
  nginx_h2c nginx;
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops);
    const std::string url = "http://127.0.0.1:" + std::to_string(nginx.port) + "/d20";
    // 64 callers of 4 sections each: 256 calls, over two links at nginx's 128 streams.
    churn_tally tally;
    churn(client, url, 256, 8ms, tally);
    INFO("first failures: " << (tally.failed.empty() ? "" : tally.failed.front()));
    CHECK(tally.timeouts == 0);
    CHECK(tally.failures == 0);
    CHECK(tally.ok == 2560);
    CHECK(nginx.log_lines_with("concurrent streams exceeded") == 0);
    CHECK(nginx.log_lines_with("too many refused streams") == 0);
    for (int i = 0; i < 500 && client.inflight() != 0; ++i)
      std::this_thread::sleep_for(2ms);
    CHECK(client.inflight() == 0);
  }
  loops.stop();
}

TEST_CASE("HTTP/2 churn against a server that holds reset streams 200 ms: nothing refused", "[h2-downstream][h2-churn]") {
  test::h2_downstream_server server({"--max-streams", "16", "--reset-hold-ms", "200"});
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops);
    churn_tally tally;
    churn(client, server.url("/delay/30"), 16, 10ms, tally);
    INFO("first failures: " << (tally.failed.empty() ? "" : tally.failed.front()));
    CHECK(tally.timeouts == 0);
    CHECK(tally.failures == 0);
    CHECK(tally.ok == 160);
    // Asked on a connection of its own: that server counts reset streams per connection.
    downstream_client other(loops);
    std::promise<transfer_result> answer;
    transfer_request stats{server.url("/stats"), {}, 3s};
    stats.http2 = true;
    other.submit(std::move(stats), [&answer](transfer_result&& r) { answer.set_value(std::move(r)); });
    auto future = answer.get_future();
    REQUIRE(future.wait_for(5s) == std::future_status::ready);
    const auto r = future.get();
    REQUIRE(r.http_status == 200);
    CHECK(nlohmann::json::parse(r.body)["refused"] == 0);
  }
  loops.stop();
}

TEST_CASE("a link that goes quiet after GOAWAY: its calls end as a connection failure, not at their timeout",
          "[h2-downstream][h2-churn]") {
  test::h2_downstream_server server;
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{60000ms, 200ms}});
    transfer_request request{server.url("/goaway-silent"), {}, 5s};
    request.http2 = true;
    std::promise<transfer_result> answer;
    const auto started = std::chrono::steady_clock::now();
    client.submit(std::move(request), [&answer](transfer_result&& r) { answer.set_value(std::move(r)); });
    auto future = answer.get_future();
    REQUIRE(future.wait_for(4s) == std::future_status::ready);
    const auto took = std::chrono::steady_clock::now() - started;
    const auto r = future.get();
    CHECK(r.error == transfer_error::connect);
    CHECK(took >= 200ms);
    CHECK(took < 2s);
    INFO(r.detail);
    CHECK(r.detail.find("downstream_drain_quiet_ms") != std::string::npos);
    // The next call gets a new link and its answer.
    transfer_request next{server.url("/item"), {}, 3s};
    next.http2 = true;
    std::promise<transfer_result> second;
    client.submit(std::move(next), [&second](transfer_result&& x) { second.set_value(std::move(x)); });
    auto later = second.get_future();
    REQUIRE(later.wait_for(5s) == std::future_status::ready);
    CHECK(later.get().http_status == 200);
  }
  loops.stop();
}

namespace {

/// One transfer, waited for.
transfer_result pool_fetch(downstream_client& client, const std::string& url, bool http2) {
  transfer_request request{url, {}, 3s};
  request.http2 = http2;
  std::promise<transfer_result> answer;
  client.submit(std::move(request), [&answer](transfer_result&& r) { answer.set_value(std::move(r)); });
  auto future = answer.get_future();
  REQUIRE(future.wait_for(5s) == std::future_status::ready);
  return future.get();
}

} // namespace

TEST_CASE("downstream_idle_timeout_ms: an idle pooled HTTP/1.1 connection is closed, the next call connects anew",
          "[downstream][h2-churn]") {
  test::silent_server server(0, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{300ms, 1000ms}});
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(pool_fetch(client, server.base_url() + "/a", false).http_status == 200);
    REQUIRE(pool_fetch(client, server.base_url() + "/b", false).http_status == 200);
    CHECK(server.accepted() == 1); // kept alive and reused within the bound
    for (int i = 0; i < 300 && server.closed_by_peer() == 0; ++i)
      std::this_thread::sleep_for(10ms);
    CHECK(server.closed_by_peer() == 1);
    CHECK(std::chrono::steady_clock::now() - started >= 300ms);
    REQUIRE(pool_fetch(client, server.base_url() + "/c", false).http_status == 200);
    CHECK(server.accepted() == 2);
  }
  loops.stop();
}

TEST_CASE("downstream_idle_timeout_ms: an HTTP/2 link with no call is closed with GOAWAY", "[h2-downstream][h2-churn]") {
  test::h2_downstream_server server;
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{300ms, 1000ms}});
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(pool_fetch(client, server.url("/item"), true).http_status == 200);
    server.line_with("CLOSED 1");
    CHECK(std::chrono::steady_clock::now() - started >= 300ms);
    REQUIRE(pool_fetch(client, server.url("/item"), true).http_status == 200);
    server.line_with("CONN 2");
  }
  loops.stop();
}
