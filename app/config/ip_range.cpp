#include "gather/config/ip_range.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace gather {

namespace {

constexpr std::array<std::uint8_t, 12> v4_mapped_prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
constexpr int v4_prefix_bits = 96;

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

bool ip_address::is_v4() const {
  return std::equal(v4_mapped_prefix.begin(), v4_mapped_prefix.end(), bytes.begin());
}

std::optional<ip_address> parse_ip(std::string_view text) {
  // inet_pton needs a NUL-terminated string; the longest IPv6 text is 45 characters.
  char buffer[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() > INET6_ADDRSTRLEN)
    return std::nullopt;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  std::uint8_t raw[16];
  if (text.find(':') == std::string_view::npos) {
    if (inet_pton(AF_INET, buffer, raw) != 1)
      return std::nullopt;
    return ip_from_bytes(raw, 4);
  }
  if (inet_pton(AF_INET6, buffer, raw) != 1)
    return std::nullopt;
  return ip_from_bytes(raw, 16);
}

ip_address ip_from_bytes(const std::uint8_t* bytes, std::size_t size) {
  ip_address out;
  if (size == 4) {
    std::copy(v4_mapped_prefix.begin(), v4_mapped_prefix.end(), out.bytes.begin());
    std::copy(bytes, bytes + 4, out.bytes.begin() + 12);
  } else {
    std::copy(bytes, bytes + std::min<std::size_t>(size, 16), out.bytes.begin());
  }
  return out;
}

std::string to_string(const ip_address& address) {
  char text[INET6_ADDRSTRLEN];
  const bool v4 = address.is_v4();
  if (!inet_ntop(v4 ? AF_INET : AF_INET6, address.bytes.data() + (v4 ? 12 : 0), text, sizeof text))
    return {};
  return text;
}

bool ip_range::contains(const ip_address& address) const {
  const int whole = prefix / 8;
  if (!std::equal(base.bytes.begin(), base.bytes.begin() + whole, address.bytes.begin()))
    return false;
  const int rest = prefix % 8;
  if (rest == 0)
    return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (base.bytes[whole] & mask) == (address.bytes[whole] & mask);
}

parsed_range parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  const auto address = parse_ip(text.substr(0, slash));
  if (!address)
    return {std::nullopt, "must be a CIDR range (\"10.0.0.0/8\", \"2001:db8::/32\") or an IP address"};
  const bool v4 = text.substr(0, slash).find(':') == std::string_view::npos;
  const int width = v4 ? 32 : 128;
  int bits = width;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    if (!all_digits(digits) || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0') ||
        std::stoi(std::string(digits)) > width)
      return {std::nullopt, "the prefix length after \"/\" must be a number from 0 to " + std::to_string(width)};
    bits = std::stoi(std::string(digits));
  }
  ip_range range{*address, bits + (v4 ? v4_prefix_bits : 0)};
  // 10.0.0.1/8 is a typo for a host or for 10.0.0.0/8: which one is not the gateway's guess.
  ip_range exact = range;
  for (int bit = range.prefix; bit < 128; ++bit)
    exact.base.bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
  if (exact.base != range.base)
    return {std::nullopt, "has bits set past its /" + std::to_string(bits) + " prefix (the range is " +
                              to_string(exact.base) + "/" + std::to_string(bits) + ")"};
  return {range, {}};
}

bool ip_ranges::contains(const ip_address& address) const {
  return std::any_of(ranges.begin(), ranges.end(), [&](const ip_range& r) { return r.contains(address); });
}

} // namespace gather
