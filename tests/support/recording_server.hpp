// A downstream that records every request byte for byte (method, target, header lines and body as
// they came off the socket) and answers what the test tells it to: what a write's call carries
// can be compared with what the client sent, with no HTTP library normalising either side.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gather::test {

struct recorded_request {
  std::string method, target;
  std::vector<std::pair<std::string, std::string>> headers; ///< names lower-case, values as sent
  std::string body;                                         ///< byte for byte
  std::string header(const std::string& lower_name) const;  ///< "" when absent
  int count(const std::string& lower_name) const;           ///< lines of that name
};

/// What the server answers a request with: a status and a body (Content-Type: application/json
/// when the body is not empty), after `delay`.
struct recorded_answer {
  int status = 200;
  std::string body;
  std::chrono::milliseconds delay{0};
};

class recording_server {
public:
  using responder = std::function<recorded_answer(const recorded_request&)>;
  explicit recording_server(responder respond); ///< binds 127.0.0.1:0, serves on its own threads
  ~recording_server();
  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// Every request received so far, in order.
  std::vector<recorded_request> requests() const;
  /// Answers written to a connection the caller still held open when the answer was due (after
  /// the answer's delay): a call that completed, not one its caller cancelled.
  int completed() const { return completed_.load(); }
  /// Answers that were due after the caller had closed its connection (a cancelled call).
  int abandoned() const { return abandoned_.load(); }

private:
  void serve(int fd);
  int listen_fd_ = -1;
  int port_ = 0;
  responder respond_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> completed_{0}, abandoned_{0};
  mutable std::mutex mutex_;
  std::vector<recorded_request> requests_;
  std::vector<std::thread> threads_; ///< the acceptor's, then one per connection
  std::vector<int> fds_;
};

} // namespace gather::test
