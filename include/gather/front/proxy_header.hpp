// The PROXY protocol header (HAProxy's specification, versions 1 and 2) that a load balancer
// writes before a connection's first byte: who the client is. A sans-IO parser: given the bytes
// read so far, it says how many more the header needs at least, or what it is, or that it is none.
// It never asks for a byte past the header's end, so what follows (a TLS ClientHello, an HTTP/2
// preface) stays unread for whoever comes next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "gather/config/ip_range.hpp"

namespace gather::proxy_protocol {

/// Version 1's longest line, CRLF included (the specification's 107 bytes).
inline constexpr std::size_t v1_max_length = 107;
/// Version 2's fixed part: the 12-byte signature, version and command, family, length.
inline constexpr std::size_t v2_fixed_length = 16;
/// The shortest header of either version ("PROXY UNKNOWN\r\n"): a first read of this many bytes
/// never takes one past the header.
inline constexpr std::size_t min_length = 15;

/// The header is not complete: at least `at_least` more bytes belong to it.
struct need_more {
  std::size_t at_least = 1;
};
/// A complete header of `length` bytes naming the client (TCP4/TCP6, or v2 PROXY over IPv4/IPv6).
struct proxied {
  ip_address source;
  std::uint16_t source_port = 0;
  std::size_t length = 0;
};
/// A complete header of `length` bytes that names nobody (v1 UNKNOWN, v2 LOCAL, v2 UNSPEC or
/// UNIX addresses): the TCP peer stands.
struct local {
  std::size_t length = 0;
};
/// Not a PROXY header (or one broken, or longer than allowed): `why` for the log, a constant.
struct invalid {
  const char* why = "";
};

using result = std::variant<need_more, proxied, local, invalid>;

/// Parses the start of a connection. `max_v2_length`: the longest v2 header accepted (its TLVs
/// included; they are skipped, never read); a longer one is invalid as soon as its length field
/// shows it. Invalid is said as early as the bytes show it.
result parse(std::string_view bytes, std::size_t max_v2_length);

} // namespace gather::proxy_protocol
