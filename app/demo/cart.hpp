// The demo's cart service (`gather demo` only): shop.v1.Cart, AddItem and GetCart, served by the
// demo's gRPC downstream (book_service.cpp) beside the book service, on its thread alone. Its
// messages' wire format is written by hand (book_wire.hpp), as the book service's is.
//
//   AddItem   adds `quantity` of the book `sku` to cart `cart_id` and answers the cart; more than
//             the book's stock (book_of: 3 of 978-7-111-12345-7, 12 of ...-6, 5 of any other)
//             is ABORTED "out of stock: N left" (the gateway's 409 `rejected`); a quantity
//             below 1 is INVALID_ARGUMENT.
//   GetCart   the cart as it stands (empty for a cart never added to).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace gather {

class demo_cart {
public:
  struct answer {
    int code = 0;        ///< a gRPC status code
    std::string message; ///< grpc-message when code is not 0
    std::string bytes;   ///< the answer's message when code is 0
  };

  /// One call of `method` ("AddItem", "GetCart") with its request message's bytes.
  answer call(std::string_view method, std::string_view request);

  /// The service's .proto (app/demo/protos/shop/v1/cart.proto, its text compiled in), what the
  /// demo's configuration compiles.
  static const char* proto_text();

private:
  std::string view(const std::string& cart_id) const;
  std::map<std::string, std::map<std::string, long long>> carts_; ///< cart -> sku -> quantity
};

} // namespace gather
