// PROXY protocol v2 headers written byte for byte (HAProxy's specification, section 2.2), for the
// tests of the parser and of a gateway behind a balancer.
#pragma once

#include <string>

namespace gather::test {

/// The 12-byte v2 signature.
inline const std::string proxy_v2_signature{"\r\n\r\n\0\r\nQUIT\n", 12};

/// A 16-bit value in network order.
inline std::string be16(unsigned v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

/// A v2 header: its command byte (0x20 LOCAL, 0x21 PROXY), family byte (0x11 TCP over IPv4, 0x21
/// TCP over IPv6, ...), then `body` (addresses and TLVs) behind its length.
inline std::string proxy_v2_header(char command, char family, const std::string& body) {
  return proxy_v2_signature + command + family + be16(static_cast<unsigned>(body.size())) + body;
}

/// 2001:db8::N, as the 16 bytes of an address block.
inline std::string ipv6_doc_address(unsigned char last) {
  std::string bytes(16, '\0');
  bytes[0] = '\x20';
  bytes[1] = '\x01';
  bytes[2] = '\x0d';
  bytes[3] = '\xb8';
  bytes[15] = static_cast<char>(last);
  return bytes;
}

} // namespace gather::test
