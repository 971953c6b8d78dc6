// The demo's gRPC downstream (`gather demo` only, never the gateway's request path): the seed's
// linkd.v3.Library, GetBook and SearchBooks, over HTTP/2 with prior knowledge on 127.0.0.1,
// served by libnghttp2 on one Boost.Asio thread of its own.
//
//   GetBook      an isbn that starts "978-" is a book (the seed's 978-7-111-12345-6 among
//                them); any other is NOT_FOUND (Trailers-Only).
//   SearchBooks  ten books, one every 10 ms (the pace's step), whatever page_size asks (a server that does not
//                honour it: the gateway's max_messages cuts the stream); a query that ends in
//                "-9" hangs, sending nothing until the client cancels.
//   shop.v1.Cart  AddItem and GetCart beside the books, on the same connections (cart.hpp).
#pragma once

#include <chrono>
#include <memory>

namespace gather {

/// When the service answers: the demo's pace by default; the benchmarks (bench/grpc_downstream)
/// give their downstream a delay.
struct demo_book_pace {
  std::chrono::milliseconds first{0}; ///< before GetBook's answer and SearchBooks' first book
  std::chrono::milliseconds step{10}; ///< between SearchBooks' books; 0: all ten at once
};

class demo_book_service {
public:
  explicit demo_book_service(demo_book_pace pace = {}); ///< listens on an ephemeral loopback port and serves
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
