#include "book_service.hpp"
#include "book_wire.hpp"
#include "cart.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio.hpp>
#include <nghttp2/nghttp2.h>

namespace gather {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace demo_wire;

constexpr int grpc_ok = 0, grpc_invalid_argument = 3, grpc_not_found = 5, grpc_unimplemented = 12;
constexpr std::size_t max_request_bytes = 64 * 1024;

nghttp2_nv field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

/// One HTTP/2 connection: its nghttp2 session fed from the socket, its calls, their timers.
class connection : public std::enable_shared_from_this<connection> {
public:
  connection(tcp::socket socket, demo_book_pace pace, demo_cart& cart)
    : socket_(std::move(socket)), pace_(pace), cart_(cart) {}
  ~connection() {
    if (session_)
      nghttp2_session_del(session_);
  }

  void start() {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &connection::on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &connection::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &connection::on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &connection::on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &connection::on_stream_close);
    nghttp2_session_server_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    flush();
    read();
  }

private:
  struct call {
    std::string path, body;
    std::string pending;    ///< framed messages not yet taken by the session
    bool finishing = false; ///< trailers follow once `pending` is sent
    int sent = 0;
    std::unique_ptr<asio::steady_timer> timer;
  };

  static connection& self(void* user) { return *static_cast<connection*>(user); }
  call* find(std::int32_t id) {
    auto it = calls_.find(id);
    return it == calls_.end() ? nullptr : &it->second;
  }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
      self(user).calls_[frame->hd.stream_id];
    return 0;
  }
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                       std::uint8_t, void* user) {
    auto* c = self(user).find(frame->hd.stream_id);
    if (c && std::string_view(reinterpret_cast<const char*>(name), namelen) == ":path")
      c->path.assign(reinterpret_cast<const char*>(value), valuelen);
    return 0;
  }
  static int on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id,
                           const std::uint8_t* data, std::size_t len, void* user) {
    auto* c = self(user).find(id);
    if (!c)
      return 0;
    if (c->body.size() + len > max_request_bytes)
      return nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
    c->body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    const bool request_end = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                             (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (request_end && self(user).find(frame->hd.stream_id))
      self(user).answer(frame->hd.stream_id);
    return 0;
  }
  static int on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* user) {
    self(user).calls_.erase(id); // a cancelled stream: its timer goes with it
    return 0;
  }

  static ssize_t read_data(nghttp2_session* session, std::int32_t id, std::uint8_t* buf,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*, void* user) {
    auto* c = self(user).find(id);
    if (!c)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (c->pending.empty()) {
      if (!c->finishing)
        return NGHTTP2_ERR_DEFERRED;
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const std::string code = std::to_string(grpc_ok);
      const nghttp2_nv trailers[] = {field("grpc-status", code)};
      nghttp2_submit_trailer(session, id, trailers, 1);
      return 0;
    }
    const auto n = std::min(length, c->pending.size());
    std::copy_n(c->pending.data(), n, buf);
    c->pending.erase(0, n);
    return static_cast<ssize_t>(n);
  }

  /// The whole request is in: one framed, uncompressed message.
  void answer(std::int32_t id) {
    auto& c = calls_[id];
    std::string request;
    if (c.body.size() < 5 || c.body[0] != 0 ||
        !read_first_text(std::string_view(c.body).substr(5), request))
      return trailers_only(id, grpc_invalid_argument, "not one uncompressed message");
    constexpr std::string_view cart_service = "/shop.v1.Cart/";
    if (c.path.rfind(cart_service, 0) == 0) {
      auto answer = cart_.call(std::string_view(c.path).substr(cart_service.size()),
                               std::string_view(c.body).substr(5));
      if (answer.code != grpc_ok)
        return trailers_only(id, answer.code, answer.message);
      c.pending = framed(answer.bytes);
      c.finishing = true;
      return respond(id);
    }
    if (c.path == "/linkd.v3.Library/GetBook") {
      if (request.rfind("978-", 0) != 0)
        return trailers_only(id, grpc_not_found, "no such book");
      c.pending = framed(encode(book_of(request)));
      c.finishing = true;
      return after(id, pace_.first, [this, id] { respond(id); });
    }
    if (c.path == "/linkd.v3.Library/SearchBooks") {
      respond(id);
      if (request.size() < 2 || request.compare(request.size() - 2, 2, "-9") != 0)
        after(id, pace_.first, [this, id] { send_next(id); }); // a query ending "-9" hangs until cancelled
      return;
    }
    trailers_only(id, grpc_unimplemented, "unknown method");
  }

  /// SearchBooks: the next of its ten books, then another `pace_.step` later (all at once for 0).
  void send_next(std::int32_t id) {
    auto* c = find(id);
    if (!c)
      return;
    do {
      const auto n = c->sent++;
      c->pending += framed(encode(n == 0 ? book_of("978-7-111-12345-7")
                                         : book{"978-7-111-2000" + std::to_string(n) + "-" + std::to_string(n),
                                                "Related book " + std::to_string(n), "Demo Author", n}));
    } while (pace_.step.count() == 0 && c->sent < 10);
    c->finishing = c->sent == 10;
    nghttp2_session_resume_data(session_, id);
    if (!c->finishing)
      after(id, pace_.step, [this, id] { send_next(id); });
    flush();
  }

  /// Runs `next` for call `id` after `delay` (at once for 0) on the call's timer: a cancelled
  /// call's timer goes with it, and `next` with the timer.
  template <class Next>
  void after(std::int32_t id, std::chrono::milliseconds delay, Next next) {
    auto* c = find(id);
    if (!c)
      return;
    if (delay.count() == 0)
      return next();
    c->timer = std::make_unique<asio::steady_timer>(socket_.get_executor(), delay);
    c->timer->async_wait([self = shared_from_this(), next](boost::system::error_code ec) {
      if (!ec)
        next();
      self->flush();
    });
  }

  void respond(std::int32_t id) {
    const nghttp2_nv head[] = {field(":status", "200"), field("content-type", "application/grpc")};
    nghttp2_data_provider body{};
    body.read_callback = &connection::read_data;
    nghttp2_submit_response(session_, id, head, 2, &body);
  }

  void trailers_only(std::int32_t id, int code, std::string_view message) {
    const std::string status = std::to_string(code);
    const nghttp2_nv head[] = {field(":status", "200"), field("content-type", "application/grpc"),
                               field("grpc-status", status), field("grpc-message", message)};
    nghttp2_submit_response(session_, id, head, 4, nullptr);
  }

  void read() {
    socket_.async_read_some(asio::buffer(in_), [self = shared_from_this()](boost::system::error_code ec,
                                                                          std::size_t n) {
      if (ec || nghttp2_session_mem_recv(self->session_, self->in_.data(), n) < 0)
        return self->close();
      self->flush();
      self->read();
    });
  }

  void flush() {
    if (writing_ || !session_)
      return;
    for (;;) {
      const std::uint8_t* data = nullptr;
      const auto n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0)
        break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (out_.empty()) {
      if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_))
        close();
      return;
    }
    writing_ = true;
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code ec,
                                                                               std::size_t) {
      self->writing_ = false;
      self->out_.clear();
      if (ec)
        return self->close();
      self->flush();
    });
  }

  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    calls_.clear();
  }

  tcp::socket socket_;
  demo_book_pace pace_;
  demo_cart& cart_; ///< the service's, on this same thread
  nghttp2_session* session_ = nullptr;
  std::array<std::uint8_t, 16384> in_{};
  std::string out_;
  bool writing_ = false;
  std::map<std::int32_t, call> calls_;
};

} // namespace

struct demo_book_service::impl {
  demo_book_pace pace;
  demo_cart cart; ///< shop.v1.Cart, beside the books: every connection's, on the one thread
  asio::io_context io{1};
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec)
        return;
      socket.set_option(tcp::no_delay(true), ec);
      std::make_shared<connection>(std::move(socket), pace, cart)->start();
      accept();
    });
  }
};

demo_book_service::demo_book_service(demo_book_pace pace) : impl_(std::make_unique<impl>()) {
  impl_->pace = pace;
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

demo_book_service::~demo_book_service() {
  impl_->io.stop();
  impl_->thread.join();
}

int demo_book_service::port() const {
  return impl_->acceptor.local_endpoint().port();
}

const char* demo_book_service::proto_text() {
  return R"(// The demo's book service (the seed's linkd-v3), served by `gather demo`.
syntax = "proto3";

package linkd.v3;

service Library {
  rpc GetBook(GetBookRequest) returns (Book);
  rpc SearchBooks(SearchBooksRequest) returns (stream Book);
}

enum Format {
  FORMAT_UNSPECIFIED = 0;
  PAPER = 1;
  EBOOK = 2;
}

message Book {
  string isbn = 1;
  string title = 2;
  string author = 3;
  int32 stock = 4;
  Format format = 5;
  int64 sold = 6;
  repeated string tags = 7;
}

message GetBookRequest {
  string isbn = 1;
}

message SearchBooksRequest {
  string query = 1;
  int32 page_size = 2;
}
)";
}

} // namespace gather
