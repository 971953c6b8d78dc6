#include "store_connection.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>

namespace gather {

namespace {

/// A connect (TCP, then AUTH and SELECT) gets this many store timeouts, at least 100 ms.
constexpr int connect_timeouts = 5;

} // namespace

struct store_connection::pending {
  explicit pending(boost::asio::io_context& loop, store_callback callback)
      : done(std::move(callback)), timer(loop) {}
  store_callback done;
  boost::asio::steady_timer timer;
  bool finished = false;

  void finish(store_result result, const resp_value& value) {
    if (finished)
      return;
    finished = true;
    timer.cancel();
    auto callback = std::move(done);
    if (callback)
      callback(result, value);
  }
};

resp_value copy_reply(const redisReply* reply) {
  resp_value out;
  if (!reply)
    return out;
  switch (reply->type) {
    case REDIS_REPLY_INTEGER:
      out.what = resp_value::type::integer;
      out.integer = reply->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.what = reply->type == REDIS_REPLY_STRING   ? resp_value::type::string
                 : reply->type == REDIS_REPLY_STATUS ? resp_value::type::status
                                                     : resp_value::type::error;
      out.text.assign(reply->str, reply->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.what = resp_value::type::array;
      out.items.reserve(reply->elements);
      for (std::size_t i = 0; i < reply->elements; ++i)
        out.items.push_back(copy_reply(reply->element[i]));
      break;
    default:
      break; // nil
  }
  return out;
}

store_connection::store_connection(boost::asio::io_context& loop, store_endpoint endpoint,
                                   std::function<void(bool, const std::string&)> on_state)
    : loop_(loop), endpoint_(std::move(endpoint)), on_state_(std::move(on_state)),
      connect_timer_(loop), retry_timer_(loop) {}

store_connection::~store_connection() {
  closed_ = true;
  dropping_ = true; // nobody may be called back from a destructor
  on_state_ = nullptr;
  if (context_) {
    redisAsyncContext* context = context_;
    redisAsyncFree(context); // pending callbacks see closed_ and drop their callers
  }
}

void store_connection::start() {
  connect();
}

void store_connection::close() {
  if (closed_)
    return;
  closed_ = true;
  connect_timer_.cancel();
  retry_timer_.cancel();
  if (context_) {
    redisAsyncContext* context = context_;
    context_ = nullptr;
    freeing_ = true;
    redisAsyncFree(context); // every command waiting ends as an error
    freeing_ = false;
  }
  ready_ = false;
}

void store_connection::connect() {
  if (closed_ || context_)
    return;
  redisAsyncContext* context = redisAsyncConnect(endpoint_.address.c_str(), endpoint_.port);
  if (!context) {
    lost("no memory for a connection");
    return;
  }
  if (context->err) {
    const std::string why = context->errstr;
    redisAsyncFree(context);
    lost(why);
    return;
  }
  context_ = context;
  context->data = this;
  ++generation_;
  want_read_ = read_armed_ = want_write_ = write_armed_ = false;
  socket_ = std::make_unique<boost::asio::posix::stream_descriptor>(loop_, context->c.fd);
  context->ev.data = this;
  context->ev.addRead = &store_connection::hook_add_read;
  context->ev.delRead = &store_connection::hook_del_read;
  context->ev.addWrite = &store_connection::hook_add_write;
  context->ev.delWrite = &store_connection::hook_del_write;
  context->ev.cleanup = &store_connection::hook_cleanup;
  // Asks for the write event (the hooks are set): a connect completes on it.
  redisAsyncSetConnectCallback(context, &store_connection::on_connect);
  redisAsyncSetDisconnectCallback(context, &store_connection::on_disconnect);
  connect_timer_.expires_after(std::max(std::chrono::milliseconds(100), endpoint_.timeout * connect_timeouts));
  connect_timer_.async_wait([self = shared_from_this(), generation = generation_](auto ec) {
    if (!ec && self->context_ && self->generation_ == generation && !self->ready_)
      self->post_lost("no connection within the connect timeout");
  });
}

void store_connection::on_connect(const redisAsyncContext* context, int status) {
  auto* self = static_cast<store_connection*>(context->data);
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback (the cleanup hook has run or runs next).
    const std::string why = context->errstr;
    self->context_ = nullptr;
    self->post_lost(why);
    return;
  }
  self->handshake();
}

void store_connection::handshake() {
  std::vector<std::vector<std::string>> steps;
  if (!endpoint_.password.empty())
    steps.push_back({"AUTH", endpoint_.password});
  if (endpoint_.db != 0)
    steps.push_back({"SELECT", std::to_string(endpoint_.db)});
  steps.push_back({"PING"});
  auto remaining = std::make_shared<std::size_t>(steps.size());
  for (const auto& argv : steps) {
    const bool auth = argv.front() == "AUTH";
    send(argv, std::make_shared<pending>(
                   loop_, [self = shared_from_this(), remaining, auth, generation = generation_](
                              store_result result, const resp_value& value) {
                     if (self->generation_ != generation || self->closed_ || self->ready_)
                       return;
                     if (result != store_result::ok) {
                       // The password is never repeated; the server's words are.
                       const std::string said = value.what == resp_value::type::error ? ": " + value.text : "";
                       self->post_lost(std::string(auth ? "AUTH refused" : "the handshake failed") +
                                       (result == store_result::timeout ? " (timeout)" : said));
                       return;
                     }
                     if (--*remaining == 0) {
                       self->ready_ = true;
                       self->backoff_.reset();
                       self->connect_timer_.cancel();
                       if (self->on_state_)
                         self->on_state_(true, "");
                     }
                   }),
         endpoint_.timeout);
  }
}

void store_connection::on_disconnect(const redisAsyncContext* context, int status) {
  auto* self = static_cast<store_connection*>(context->data);
  self->context_ = nullptr;
  if (!self->closed_ && !self->freeing_)
    self->post_lost(status == REDIS_OK ? "the connection was closed" : std::string(context->errstr));
}

void store_connection::post_lost(std::string why) {
  boost::asio::post(loop_, [self = shared_from_this(), why = std::move(why), generation = generation_] {
    if (self->generation_ == generation)
      self->lost(why);
  });
}

void store_connection::lost(const std::string& why) {
  if (context_) {
    redisAsyncContext* context = context_;
    context_ = nullptr;
    freeing_ = true; // our own free: on_disconnect must not report it again
    redisAsyncFree(context); // every command waiting ends as an error
    freeing_ = false;
  }
  ++generation_; // whatever still waits for the old connection is stale
  connect_timer_.cancel();
  ready_ = false;
  if (on_state_)
    on_state_(false, why);
  reconnect_later();
}

void store_connection::reconnect_later() {
  if (closed_)
    return;
  retry_timer_.expires_after(backoff_.next());
  retry_timer_.async_wait([self = shared_from_this()](auto ec) {
    if (!ec)
      self->connect();
  });
}

void store_connection::command(const std::vector<std::string>& argv, store_callback done,
                               std::chrono::milliseconds timeout) {
  auto op = std::make_shared<pending>(loop_, std::move(done));
  if (!ready_ || !context_) {
    boost::asio::post(loop_, [op] { op->finish(store_result::error, resp_value{}); });
    return;
  }
  send(argv, std::move(op), std::min(timeout, endpoint_.timeout));
}

void store_connection::send(const std::vector<std::string>& argv, std::shared_ptr<pending> op,
                            std::chrono::milliseconds timeout) {
  std::vector<const char*> pieces;
  std::vector<std::size_t> lengths;
  pieces.reserve(argv.size());
  lengths.reserve(argv.size());
  for (const auto& piece : argv) {
    pieces.push_back(piece.data());
    lengths.push_back(piece.size());
  }
  auto* holder = new std::shared_ptr<pending>(op);
  if (!context_ || redisAsyncCommandArgv(context_, &store_connection::on_reply, holder,
                                         static_cast<int>(argv.size()), pieces.data(),
                                         lengths.data()) != REDIS_OK) {
    delete holder;
    boost::asio::post(loop_, [op] { op->finish(store_result::error, resp_value{}); });
    return;
  }
  op->timer.expires_after(timeout);
  op->timer.async_wait([op](auto ec) {
    if (!ec)
      op->finish(store_result::timeout, resp_value{});
  });
}

void store_connection::on_reply(redisAsyncContext* context, void* reply, void* privdata) {
  std::unique_ptr<std::shared_ptr<pending>> holder(static_cast<std::shared_ptr<pending>*>(privdata));
  auto* self = static_cast<store_connection*>(context->data);
  const std::shared_ptr<pending>& op = *holder;
  if (self->dropping_) {
    op->finished = true; // the connection is being destroyed: nobody is called back
    op->done = nullptr;
    op->timer.cancel();
    return;
  }
  if (!reply) {
    op->finish(store_result::error, resp_value{});
    return;
  }
  const resp_value value = copy_reply(static_cast<redisReply*>(reply));
  op->finish(value.what == resp_value::type::error ? store_result::error : store_result::ok, value);
}

void store_connection::hook_add_read(void* data) {
  auto* self = static_cast<store_connection*>(data);
  self->want_read_ = true;
  self->arm_read();
}

void store_connection::hook_del_read(void* data) {
  static_cast<store_connection*>(data)->want_read_ = false;
}

void store_connection::hook_add_write(void* data) {
  auto* self = static_cast<store_connection*>(data);
  self->want_write_ = true;
  self->arm_write();
}

void store_connection::hook_del_write(void* data) {
  static_cast<store_connection*>(data)->want_write_ = false;
}

void store_connection::hook_cleanup(void* data) {
  // hiredis closes the descriptor right after this: Asio lets go of it without closing it.
  auto* self = static_cast<store_connection*>(data);
  if (self->socket_) {
    self->socket_->release(); // cancels the waits: their handlers see operation_aborted
    self->socket_.reset();
  }
  self->want_read_ = self->want_write_ = false;
  self->context_ = nullptr;
}

void store_connection::arm_read() {
  if (read_armed_ || !socket_)
    return;
  read_armed_ = true;
  socket_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [self = shared_from_this(), generation = generation_](auto ec) {
                        if (self->generation_ != generation)
                          return;
                        self->read_armed_ = false;
                        if (ec || !self->context_ || !self->want_read_)
                          return;
                        redisAsyncHandleRead(self->context_); // may end the connection
                        if (self->generation_ != generation || !self->context_)
                          return;
                        if (self->context_->c.reader->len > self->endpoint_.max_reply_bytes) {
                          self->lost("an answer over " + std::to_string(self->endpoint_.max_reply_bytes) +
                                     " bytes");
                          return;
                        }
                        if (self->want_read_)
                          self->arm_read();
                      });
}

void store_connection::arm_write() {
  if (write_armed_ || !socket_)
    return;
  write_armed_ = true;
  socket_->async_wait(boost::asio::posix::stream_descriptor::wait_write,
                      [self = shared_from_this(), generation = generation_](auto ec) {
                        if (self->generation_ != generation)
                          return;
                        self->write_armed_ = false;
                        if (ec || !self->context_ || !self->want_write_)
                          return;
                        redisAsyncHandleWrite(self->context_);
                        if (self->generation_ == generation && self->context_ && self->want_write_)
                          self->arm_write();
                      });
}

} // namespace gather
