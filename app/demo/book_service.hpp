// The demo's gRPC downstream (`gather demo` only, never the gateway's request path): the seed's
// linkd.v3.Library, GetBook and SearchBooks, over HTTP/2 with prior knowledge on 127.0.0.1,
// served by libnghttp2 on one Boost.Asio thread of its own.
//
//   GetBook      an isbn that starts "978-" is a book (the seed's 978-7-111-12345-6 among
//                them); any other is NOT_FOUND (Trailers-Only).
//   SearchBooks  ten books, one every 10 ms, whatever page_size asks (a server that does not
//                honour it: the gateway's max_messages cuts the stream); a query that ends in
//                "-9" hangs, sending nothing until the client cancels.
#pragma once

#include <memory>

namespace gather {

class demo_book_service {
public:
  demo_book_service();  ///< listens on an ephemeral loopback port and serves
  ~demo_book_service(); ///< stops and joins; calls in flight are dropped
  demo_book_service(const demo_book_service&) = delete;
  demo_book_service& operator=(const demo_book_service&) = delete;

  int port() const;
  /// The service's .proto (linkd/v3/library.proto), what the demo's configuration compiles.
  static const char* proto_text();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
