#include "cart.hpp"
#include "book_wire.hpp"
#include "cart_proto.hpp"

namespace gather {

namespace {

constexpr int grpc_invalid_argument = 3, grpc_aborted = 10, grpc_unimplemented = 12;

} // namespace

demo_cart::answer demo_cart::call(std::string_view method, std::string_view request) {
  demo_wire::fields in;
  if (!demo_wire::read_fields(request, in))
    return {grpc_invalid_argument, "not a message of its type", {}};
  const auto cart_id = in.text[1];
  if (method == "GetCart")
    return {0, {}, view(cart_id)};
  if (method != "AddItem")
    return {grpc_unimplemented, "unknown method", {}};
  // int32 on the wire: a negative one is ten bytes of two's complement.
  const auto quantity = static_cast<long long>(static_cast<std::int32_t>(in.number[4]));
  const auto sku = in.text[3];
  if (quantity < 1)
    return {grpc_invalid_argument, "quantity must be at least 1", {}};
  auto& lines = carts_[cart_id];
  const long long stock = demo_wire::book_of(sku).stock;
  if (lines[sku] + quantity > stock) {
    if (lines[sku] == 0)
      lines.erase(sku);
    return {grpc_aborted, "out of stock: " + std::to_string(stock - lines[sku]) + " left", {}};
  }
  lines[sku] += quantity;
  return {0, {}, view(cart_id)};
}

std::string demo_cart::view(const std::string& cart_id) const {
  std::vector<demo_wire::cart_line> lines;
  if (const auto cart = carts_.find(cart_id); cart != carts_.end())
    for (const auto& [sku, quantity] : cart->second)
      lines.push_back({sku, quantity});
  return demo_wire::encode_cart(cart_id, lines);
}

const char* demo_cart::proto_text() { return cart_proto_text; }

} // namespace gather
