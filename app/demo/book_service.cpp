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

#include "gather/http2/h2_codec.hpp"
#include "gather/values/h2_codes.hpp"

namespace gather {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace demo_wire;

constexpr int grpc_ok = 0, grpc_invalid_argument = 3, grpc_not_found = 5, grpc_unimplemented = 12;
constexpr std::size_t max_request_bytes = 64 * 1024;
constexpr std::size_t write_batch = 64 * 1024;

/// One HTTP/2 connection: its server codec (gather/http2/h2_codec.hpp) fed from the socket, its
/// calls (each its stream's data), their timers.
class connection : public std::enable_shared_from_this<connection>, private http2::h2_codec_events {
public:
  connection(tcp::socket socket, demo_book_pace pace, demo_cart& cart)
    : socket_(std::move(socket)), pace_(pace), cart_(cart), codec_(http2::h2_role::server, settings(), events()) {}

  void start() {
    flush();
    read();
  }

private:
  struct call {
    std::string path, body;
    std::string pending;    ///< framed messages not yet taken by the codec
    bool finishing = false; ///< trailers follow once `pending` is sent
    int sent = 0;
    std::unique_ptr<asio::steady_timer> timer;
  };

  static http2::h2_settings settings() {
    http2::h2_settings s;
    s.max_concurrent_streams = 100;
    return s;
  }
  http2::h2_codec_events& events() { return *this; }
  call* find(std::int32_t id) {
    auto it = calls_.find(id);
    return it == calls_.end() ? nullptr : &it->second;
  }

  // ---- the codec's events ------------------------------------------------------------------------
  void* stream_opened(std::int32_t id) override { return &calls_[id]; }
  void header(std::int32_t, void* data, http2::h2_block kind, std::string_view name, std::string_view value) override {
    if (data && kind == http2::h2_block::request && name == ":path")
      static_cast<call*>(data)->path = value;
  }
  void data(std::int32_t id, void* data, std::string_view bytes) override {
    auto* c = static_cast<call*>(data);
    if (!c)
      return;
    if (c->body.size() + bytes.size() > max_request_bytes)
      return codec_.reset(id, h2_code::refused_stream);
    c->body.append(bytes);
  }
  void headers_end(std::int32_t id, void* data, http2::h2_block, bool ends_stream) override {
    if (ends_stream && data)
      answer(id);
  }
  void data_end(std::int32_t id, void* data) override {
    if (data)
      answer(id);
  }
  void stream_closed(std::int32_t id, void*, std::uint32_t) override {
    calls_.erase(id); // a cancelled stream: its timer goes with it
  }
  long body_bytes(std::int32_t id, void*, std::uint8_t* buf, std::size_t length, http2::h2_body_end& end) override {
    auto* c = find(id);
    end = http2::h2_body_end::last;
    if (!c)
      return 0;
    if (c->pending.empty()) {
      if (!c->finishing)
        return http2::h2_defer;
      end = http2::h2_body_end::trailers;
      const std::string code = std::to_string(grpc_ok);
      const http2::h2_field trailers[] = {{"grpc-status", code}};
      codec_.submit_trailers(id, trailers, 1);
      return 0;
    }
    const auto n = std::min(length, c->pending.size());
    std::copy_n(c->pending.data(), n, buf);
    c->pending.erase(0, n);
    end = http2::h2_body_end::more;
    return static_cast<long>(n);
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
    codec_.resume(id);
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
    const http2::h2_field head[] = {{":status", "200"}, {"content-type", "application/grpc"}};
    codec_.submit_response(id, head, 2, true);
  }

  void trailers_only(std::int32_t id, int code, std::string_view message) {
    const std::string status = std::to_string(code);
    const http2::h2_field head[] = {{":status", "200"}, {"content-type", "application/grpc"},
                                    {"grpc-status", status}, {"grpc-message", message}};
    codec_.submit_response(id, head, 4, false);
  }

  void read() {
    socket_.async_read_some(asio::buffer(in_), [self = shared_from_this()](boost::system::error_code ec,
                                                                          std::size_t n) {
      if (ec || !self->codec_.receive(self->in_.data(), n))
        return self->close();
      self->flush();
      self->read();
    });
  }

  void flush() {
    if (writing_ || closed_)
      return;
    if (!codec_.produce(out_, write_batch))
      return close();
    if (out_.empty()) {
      if (!codec_.alive())
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
    closed_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    calls_.clear();
  }

  tcp::socket socket_;
  demo_book_pace pace_;
  demo_cart& cart_; ///< the service's, on this same thread
  std::array<std::uint8_t, 16384> in_{};
  std::string out_;
  bool writing_ = false;
  bool closed_ = false;
  std::map<std::int32_t, call> calls_; ///< the owner of each stream's data (map nodes stay put)
  http2::h2_codec codec_;              ///< last: its events reach the members above
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
