// One loop's connection to the shared store: hiredis 0.14's async context driven by the loop
// (docs/shared.md, "On the event loops"). Everything here runs on that loop's thread.
//
// hiredis owns the socket: Asio only watches its descriptor (a stream_descriptor released, never
// closed, when hiredis cleans up), so the descriptor is closed once, by hiredis. hiredis 0.14 has
// no timeouts in its async API: each command has Gather's own timer, and a connect its own too.
// Commands issued in one loop turn leave in one write (hiredis buffers them until the
// descriptor is writable). A reply never arrives for nothing: a command timed out keeps its
// slot in hiredis's FIFO and its late reply is dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gather/shared/resp_value.hpp"
#include "gather/values/reconnect_backoff.hpp"
#include "gather/values/shared_figures.hpp"

struct redisAsyncContext;
struct redisReply;

namespace gather {

struct store_endpoint {
  std::string address; ///< an IP address (resolved before: hiredis would resolve on the loop)
  int port = 6379;
  int db = 0;
  std::string password; ///< empty: no AUTH
  std::chrono::milliseconds timeout{20};
  std::size_t max_reply_bytes = 16u << 20; ///< an answer bigger than this ends the connection
};

/// What a command's caller gets, once: the result and the answer (nil unless ok).
using store_callback = std::function<void(store_result, const resp_value&)>;

class store_connection : public std::enable_shared_from_this<store_connection> {
public:
  /// `on_state(up)`: the connection became usable (AUTH and SELECT answered) or was lost.
  store_connection(boost::asio::io_context& loop, store_endpoint endpoint,
                   std::function<void(bool up, const std::string& why)> on_state);
  ~store_connection();

  /// Starts connecting (and reconnects, with backoff, whenever the connection is lost).
  void start();
  /// Ends the connection for good: pending commands end as errors; no reconnect.
  void close();

  /// Sends one command; `done` runs on this loop exactly once: with the answer, with `error`
  /// (no connection, an error answer, a broken one), or with `timeout` after `timeout` (at most
  /// endpoint.timeout: a request's store budget may leave less).
  void command(const std::vector<std::string>& argv, store_callback done, std::chrono::milliseconds timeout);
  /// Connected, and the handshake answered: a command is sent at once.
  bool ready() const { return ready_ && context_ != nullptr; }

  bool connected() const { return ready_; }

private:
  struct pending;
  static void on_reply(redisAsyncContext* context, void* reply, void* privdata);
  static void on_connect(const redisAsyncContext* context, int status);
  static void on_disconnect(const redisAsyncContext* context, int status);
  static void hook_add_read(void* self);
  static void hook_del_read(void* self);
  static void hook_add_write(void* self);
  static void hook_del_write(void* self);
  static void hook_cleanup(void* self);

  void connect();
  void handshake();
  void lost(const std::string& why);
  /// lost() at the loop's next turn: never from inside a hiredis callback.
  void post_lost(std::string why);
  void reconnect_later();
  void arm_read();
  void arm_write();
  void send(const std::vector<std::string>& argv, std::shared_ptr<pending> op, std::chrono::milliseconds timeout);

  boost::asio::io_context& loop_;
  store_endpoint endpoint_;
  std::function<void(bool, const std::string&)> on_state_;
  redisAsyncContext* context_ = nullptr;
  std::unique_ptr<boost::asio::posix::stream_descriptor> socket_; ///< watches hiredis's fd
  bool want_read_ = false, read_armed_ = false;
  bool want_write_ = false, write_armed_ = false;
  bool ready_ = false;   ///< connected, AUTH and SELECT answered
  bool closed_ = false;  ///< close() was called: no reconnect
  bool freeing_ = false; ///< inside our own redisAsyncFree
  bool dropping_ = false; ///< being destroyed: waiting commands are dropped, not called back
  boost::asio::steady_timer connect_timer_;
  boost::asio::steady_timer retry_timer_;
  /// 50 ms doubling to 2 s (docs/shared.md).
  reconnect_backoff backoff_{std::chrono::milliseconds(50), std::chrono::milliseconds(2000)};
  std::uint64_t generation_ = 0; ///< one per connection: handlers of an older one do nothing
};

/// Copies hiredis's reply (null: the connection broke) into a value.
resp_value copy_reply(const redisReply* reply);

} // namespace gather
