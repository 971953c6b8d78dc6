#include "book_wire.hpp"

#include <cstdint>

namespace gather::demo_wire {

namespace {

void put_varint(std::string& out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7)
    out += static_cast<char>((v & 0x7f) | 0x80);
  out += static_cast<char>(v);
}
void put_text(std::string& out, int field, std::string_view text) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3 | 2);
  put_varint(out, text.size());
  out += text;
}
void put_number(std::string& out, int field, std::uint64_t v) {
  if (v == 0) // proto3: a default is not written
    return;
  put_varint(out, static_cast<std::uint64_t>(field) << 3);
  put_varint(out, v);
}

bool get_varint(std::string_view& in, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

} // namespace

bool read_fields(std::string_view in, fields& out) {
  while (!in.empty()) {
    std::uint64_t tag = 0, v = 0;
    if (!get_varint(in, tag))
      return false;
    const int field = static_cast<int>(tag >> 3);
    switch (tag & 7) {
    case 0:
      if (!get_varint(in, v))
        return false;
      out.number[field] = v;
      break;
    case 1:
    case 5: {
      const std::size_t n = (tag & 7) == 1 ? 8 : 4;
      if (in.size() < n)
        return false;
      in.remove_prefix(n);
      break;
    }
    case 2:
      if (!get_varint(in, v) || v > in.size())
        return false;
      out.text[field].assign(in.substr(0, v));
      in.remove_prefix(v);
      break;
    default: return false;
    }
  }
  return true;
}

bool read_first_text(std::string_view in, std::string& text) {
  fields read;
  if (!read_fields(in, read))
    return false;
  if (const auto first = read.text.find(1); first != read.text.end())
    text = first->second;
  return true;
}

std::string encode_cart(const std::string& cart_id, const std::vector<cart_line>& lines) {
  std::string out;
  put_text(out, 1, cart_id);
  long long count = 0;
  for (const auto& line : lines) {
    std::string item;
    put_text(item, 1, line.sku);
    put_number(item, 2, static_cast<std::uint64_t>(line.quantity));
    put_text(out, 2, item);
    count += line.quantity;
  }
  put_number(out, 3, static_cast<std::uint64_t>(count));
  return out;
}

std::string encode(const book& b) {
  std::string out;
  put_text(out, 1, b.isbn);
  put_text(out, 2, b.title);
  put_text(out, 3, b.author);
  put_number(out, 4, static_cast<std::uint64_t>(b.stock));
  put_number(out, 5, 1);
  put_number(out, 6, 1000 + static_cast<std::uint64_t>(b.stock) * 37);
  return out;
}

book book_of(const std::string& isbn) {
  if (isbn == "978-7-111-12345-6")
    return {isbn, "服务端通信工程", "Leeting Yan", 12};
  if (isbn == "978-7-111-12345-7")
    return {isbn, "网络编程基础", "Leeting Yan", 3};
  return {isbn, "Demo book " + isbn, "Demo Author", 5};
}

std::string framed(const std::string& message) {
  std::string out(5, '\0');
  const auto n = static_cast<std::uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

} // namespace gather::demo_wire
