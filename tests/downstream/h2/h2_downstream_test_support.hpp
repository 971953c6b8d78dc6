// What the HTTP/2 downstream tests (tests/downstream/h2/h2_downstream_*_test.cpp) share: a call's
// events recorded, calls and http2 transfers started, the client waited for until it lets go, and
// the TLS origins' pieces (a trusted CA, cpp-httplib's TLS server, which speaks no h2).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <httplib.h>

#include "gather/downstream/call/downstream_client.hpp"

#include "support/tls_files.hpp"

namespace gather::test::h2_downstream_support {

/// Everything a call's events saw, in order; on_data stops after `stop_after` chunks if set.
struct recorded_call final : stream_events {
  std::mutex mutex;
  std::condition_variable ended;
  std::vector<std::string> order;
  std::optional<stream_head> head;
  std::string data;
  int chunks = 0;
  int stop_after = -1;
  std::optional<header_list> trailers;
  std::optional<stream_end> end;

  bool on_head(stream_head&& h) override {
    std::lock_guard lock(mutex);
    order.push_back("head");
    head = std::move(h);
    return true;
  }
  bool on_data(std::string_view chunk) override {
    std::lock_guard lock(mutex);
    order.push_back("data");
    data += chunk;
    return stop_after < 0 || ++chunks < stop_after;
  }
  void on_trailers(header_list&& t) override {
    std::lock_guard lock(mutex);
    order.push_back("trailers");
    trailers = std::move(t);
  }
  void on_end(stream_end&& e) override {
    std::lock_guard lock(mutex);
    order.push_back("end");
    end = std::move(e);
    ended.notify_all();
  }
  /// The end, waited for at most `limit`.
  stream_end wait(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex);
    REQUIRE(ended.wait_for(lock, limit, [&] { return end.has_value(); }));
    return *end;
  }
  bool has_ended() {
    std::lock_guard lock(mutex);
    return end.has_value();
  }
};

inline stream_request stream_get(const std::string& url,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  stream_request r;
  r.url = url;
  r.timeout = timeout;
  return r;
}

inline std::shared_ptr<recorded_call> start_call(downstream_client& client, stream_request request,
                                                 int stop_after = -1) {
  auto events = std::make_shared<recorded_call>();
  events->stop_after = stop_after;
  client.call(std::move(request), events);
  return events;
}

inline transfer_result h2_fetch(downstream_client& client, const std::string& url,
                                std::chrono::milliseconds timeout = std::chrono::seconds(3),
                                std::size_t max_bytes = 8 * 1024 * 1024, std::string header_lines = {}) {
  transfer_request request{url, std::move(header_lines), timeout, max_bytes};
  request.http2 = true;
  std::promise<transfer_result> promise;
  auto future = promise.get_future();
  client.submit(std::move(request), [&promise](transfer_result&& r) { promise.set_value(std::move(r)); });
  REQUIRE(future.wait_for(timeout + std::chrono::seconds(5)) == std::future_status::ready);
  return future.get();
}

/// The client's calls all ended and were let go (waits for the loop to take the last ones).
inline void client_is_empty(downstream_client& client) {
  for (int i = 0; i < 500 && client.inflight() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(client.inflight() == 0);
}

/// Sets SSL_CERT_FILE (OpenSSL's default verify paths read it) for the scope.
struct trusted_h2_ca {
  explicit trusted_h2_ca(const std::string& file) { ::setenv("SSL_CERT_FILE", file.c_str(), 1); }
  ~trusted_h2_ca() { ::unsetenv("SSL_CERT_FILE"); }
};

/// cpp-httplib's TLS server on 127.0.0.1, which speaks no h2: `handler` answers every GET, on one
/// of `threads` threads (it serves a kept-alive connection on one thread until it closes).
struct h1_only_tls_server {
  httplib::SSLServer server;
  std::thread thread;
  std::string url; ///< https://127.0.0.1:port/x
  h1_only_tls_server(const gather::test::tls_files& files, httplib::Server::Handler handler, std::size_t threads = 8)
    : server(files.cert.c_str(), files.key.c_str()) {
    REQUIRE(server.is_valid());
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server.Get(".*", std::move(handler));
    const int port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running())
      std::this_thread::yield();
    url = "https://127.0.0.1:" + std::to_string(port) + "/x";
  }
  ~h1_only_tls_server() {
    server.stop();
    thread.join();
  }
};

/// A transfer's completion that only counts that it ran.
inline downstream_client::completion counted(std::atomic<int>& runs) {
  return [&runs](transfer_result&&) { ++runs; };
}

inline transfer_request http2_transfer(const std::string& url, std::chrono::milliseconds timeout) {
  transfer_request request{url, {}, timeout, 1 << 20};
  request.http2 = true;
  return request;
}

} // namespace gather::test::h2_downstream_support
