// Real downstreams for tests: cpp-httplib servers on 127.0.0.1 with an ephemeral port, whose
// handlers the test writes (delay, hang, status, body), plus a "black hole" that accepts TCP
// connections into its backlog and never answers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gather::test {

class test_server {
public:
  using handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  /// `threads`: handler pool size (each hanging request holds one).
  explicit test_server(std::size_t threads = 64);
  ~test_server(); ///< releases hanging handlers, stops and joins

  /// Registers a GET handler for an httplib regex pattern. Call before start().
  test_server& get(const std::string& pattern, handler h);
  /// Binds 127.0.0.1:0 and starts serving; returns once the server accepts connections.
  void start();
  /// The same on another loopback address (127.0.0.2, ...): several instances of one service;
  /// on `port` when not 0 (the instances of a `dns` name share one).
  void start_on(const std::string& host, int port = 0);

  int port() const { return port_; }
  /// "host:port" as an upstream's `endpoints` entry names it.
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  std::string base_url() const; ///< "http://127.0.0.1:<port>"

  /// Inside a handler: block until the server is being destroyed (a downstream that never answers
  /// within any test's time), or until `max` passes.
  void hang(std::chrono::milliseconds max = std::chrono::seconds(60));
  /// Inside a handler: sleep `d`, but return early when the server is being destroyed.
  void delay(std::chrono::milliseconds d);

  /// Requests that reached any handler so far.
  int calls() const { return calls_.load(); }
  /// Requests whose handler is running right now, and the highest such number seen.
  int active() const { return active_.load(); }
  int max_active() const { return max_active_.load(); }

  httplib::Server& raw() { return server_; }

private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string host_ = "127.0.0.1";
  std::atomic<int> calls_{0}, active_{0}, max_active_{0};
  std::mutex mutex_;
  std::condition_variable stopping_cv_;
  bool stopping_ = false;
  std::size_t threads_;
};

/// A downstream that accepts connections, reads whatever arrives and never answers; one thread
/// polls all its connections, so it holds thousands of hung calls. It counts connections accepted
/// and connections the peer closed: a test sees a cancelled transfer as a closed connection.
class silent_server {
public:
  silent_server();  ///< binds 127.0.0.1:0 (backlog 4096) and starts its thread
  /// The first `silent` connections never get an answer; every later one gets `response` (raw
  /// HTTP bytes) for each request it sends: a downstream whose first call hangs.
  silent_server(int silent, std::string response);
  ~silent_server(); ///< closes everything and joins
  int port() const { return port_; }
  std::string base_url() const;
  int accepted() const { return accepted_.load(); }
  int closed_by_peer() const { return closed_.load(); }
  int open_connections() const { return accepted_.load() - closed_.load(); }

private:
  void start();
  int fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0}, closed_{0};
  std::atomic<bool> stop_{false};
  int silent_ = -1; ///< -1: every connection is silent
  std::string response_;
  std::thread thread_;
};

/// A TCP socket listening on 127.0.0.1 with an ephemeral port: returns the descriptor and sets
/// `port`; throws std::runtime_error on failure. `flags` are extra socket() type flags.
int listen_on_loopback(int backlog, int& port, int flags = 0);

/// A complete HTTP/1.1 200 response carrying `json_body`.
std::string raw_json_response(const std::string& json_body);

/// A test downstream's JSON answer.
inline void answer_json(httplib::Response& res, const nlohmann::json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

/// Polls `pred` every few milliseconds until it holds or `limit` passes; returns its last value.
/// For state that has no event to wait on (counters in another process or thread).
bool eventually(const std::function<bool()>& pred,
                std::chrono::milliseconds limit = std::chrono::seconds(5));

} // namespace gather::test
