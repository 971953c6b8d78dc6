#include "gather/admission/base64url.hpp"

#include <array>
#include <cstdint>

namespace gather {

namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each byte's 6-bit value, or 64 for a byte outside the alphabet.
constexpr std::array<std::uint8_t, 256> make_values() {
  std::array<std::uint8_t, 256> values{};
  for (auto& v : values)
    v = 64;
  for (std::uint8_t i = 0; i < 64; ++i)
    values[static_cast<unsigned char>(alphabet[i])] = i;
  return values;
}

constexpr auto values = make_values();

} // namespace

std::optional<std::string> base64url_decode(std::string_view text) {
  // A length of 1 mod 4 leaves 6 bits: no whole byte, never the output of an encoder.
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const std::uint8_t v = values[static_cast<unsigned char>(c)];
    if (v == 64)
      return std::nullopt;
    bits = (bits << 6) | v;
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  // The bits left over (2 or 4) must be zero: otherwise two texts would decode alike.
  if (count > 0 && (bits & ((1u << count) - 1)) != 0)
    return std::nullopt;
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : bytes) {
    bits = (bits << 8) | static_cast<unsigned char>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      out.push_back(alphabet[(bits >> count) & 0x3F]);
    }
  }
  if (count > 0)
    out.push_back(alphabet[(bits << (6 - count)) & 0x3F]);
  return out;
}

} // namespace gather
