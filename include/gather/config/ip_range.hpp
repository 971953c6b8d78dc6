// IP addresses and CIDR ranges (`trusted_proxies`, docs/gateway.md "Behind a load balancer"): one
// 16-byte form for both families, an IPv4 address held as its IPv4-mapped IPv6 address
// (::ffff:a.b.c.d), so a dual-stack listener's peer ::ffff:10.0.0.1 is in 10.0.0.0/8.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gather {

struct ip_address {
  std::array<std::uint8_t, 16> bytes{};

  /// An IPv4 address (held as ::ffff:a.b.c.d).
  bool is_v4() const;
  friend bool operator==(const ip_address& a, const ip_address& b) { return a.bytes == b.bytes; }
  friend bool operator!=(const ip_address& a, const ip_address& b) { return !(a == b); }
};

/// Dotted-quad IPv4 or RFC 4291 IPv6 text, nothing around it (no brackets, port or zone);
/// nullopt otherwise.
std::optional<ip_address> parse_ip(std::string_view text);
/// 4 bytes (IPv4) or 16 (IPv6) in network order, as a socket address holds them.
ip_address ip_from_bytes(const std::uint8_t* bytes, std::size_t size);
/// "10.0.0.1" for an IPv4 (or IPv4-mapped) address, RFC 5952 text for the others ("2001:db8::1").
std::string to_string(const ip_address& address);

/// A CIDR range; `prefix` counts bits of the 16-byte form (an IPv4 /8 is 104).
struct ip_range {
  ip_address base;
  int prefix = 128;
  bool contains(const ip_address& address) const;
};

/// "10.0.0.0/8", "2001:db8::/32", or a bare address (one host: /32 or /128). The problem with the
/// text otherwise: not an address, a prefix out of range, or bits set past the prefix.
struct parsed_range {
  std::optional<ip_range> range;
  std::string problem;
};
parsed_range parse_cidr(std::string_view text);

/// A list of ranges; an address is in it when it is in any of them.
struct ip_ranges {
  std::vector<ip_range> ranges;
  bool empty() const { return ranges.empty(); }
  bool contains(const ip_address& address) const;
};

} // namespace gather
