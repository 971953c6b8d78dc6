// The protobuf wire format of the few messages the demo's book service reads and writes, by hand:
// the service needs no descriptors of its own (the gateway's are compiled from its proto_text()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gather::demo_wire {

struct book {
  std::string isbn, title, author;
  int stock = 0;
};

/// GetBookRequest {isbn = 1} and SearchBooksRequest {query = 1, page_size = 2}: field 1's text.
/// False when `in` is not a well-formed message.
bool read_first_text(std::string_view in, std::string& text);

/// A message's fields as the cart reads them: length-delimited ones as text, varints as numbers
/// (by field number; the last of a repeated one).
struct fields {
  std::map<int, std::string> text;
  std::map<int, std::uint64_t> number;
};
/// False when `in` is not a well-formed message.
bool read_fields(std::string_view in, fields& out);

struct cart_line {
  std::string sku;
  long long quantity = 0;
};
/// shop.v1.CartView: cart_id 1, lines 2 (CartLine: sku 1, quantity 2), count 3.
std::string encode_cart(const std::string& cart_id, const std::vector<cart_line>& lines);

/// linkd.v3.Book: isbn 1, title 2, author 3, stock 4, format 5 (PAPER), sold 6.
std::string encode(const book& b);

/// The catalogue: the seed's two books by their isbn, a made-up one for any other.
book book_of(const std::string& isbn);

/// One gRPC message on the wire: uncompressed, its 4-byte big-endian length, the bytes.
std::string framed(const std::string& message);

} // namespace gather::demo_wire
