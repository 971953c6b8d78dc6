#include "gather/front/proxy_header.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace gather::proxy_protocol {

namespace {

constexpr std::string_view v1_prefix = "PROXY ";
constexpr std::string_view v2_signature{"\r\n\r\n\0\r\nQUIT\n", 12};

/// Whether `have` can still begin `full` (the shorter's length is compared).
bool may_begin(std::string_view have, std::string_view full) {
  const auto n = std::min(have.size(), full.size());
  return have.substr(0, n) == full.substr(0, n);
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == ' ') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

/// A port as version 1 writes it: 0..65535 in decimal, no leading zero.
std::optional<std::uint16_t> v1_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  unsigned value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

/// "PROXY TCP4 src dst sport dport" (CRLF removed); `length` with the CRLF.
result v1_line(std::string_view line, std::size_t length) {
  const auto parts = words(line.substr(v1_prefix.size()));
  if (parts[0] == "UNKNOWN")
    return local{length}; // the specification: whatever follows UNKNOWN is ignored
  if (parts.size() != 5 || (parts[0] != "TCP4" && parts[0] != "TCP6"))
    return invalid{"PROXY v1: not TCP4, TCP6 or UNKNOWN with two addresses and two ports"};
  const bool v6 = parts[0] == "TCP6";
  const auto source = parse_ip(parts[1]);
  const auto destination = parse_ip(parts[2]);
  const auto source_port = v1_port(parts[3]);
  if (!source || !destination || !source_port || !v1_port(parts[4]))
    return invalid{"PROXY v1: an address or a port is malformed"};
  const bool written_v6 = parts[1].find(':') != std::string_view::npos;
  if (written_v6 != v6 || (parts[2].find(':') != std::string_view::npos) != v6)
    return invalid{"PROXY v1: an address of the other family"};
  return proxied{*source, *source_port, length};
}

result v1(std::string_view bytes) {
  if (!may_begin(bytes, v1_prefix))
    return invalid{"not a PROXY protocol header"};
  const auto window = bytes.substr(0, v1_max_length);
  const auto cr = window.find('\r');
  if (window.find('\n') < cr || window.find('\0') < cr)
    return invalid{"PROXY v1: a line feed or NUL before the CRLF"};
  // The protocol word, as far as it has come (the same verdict whatever follows).
  const auto line = window.substr(0, cr);
  if (line.size() > v1_prefix.size()) {
    const auto rest = line.substr(v1_prefix.size());
    if (!may_begin(rest, "TCP4 ") && !may_begin(rest, "TCP6 ") && !may_begin(rest, "UNKNOWN"))
      return invalid{"PROXY v1: not TCP4, TCP6 or UNKNOWN"};
  }
  if (cr == std::string_view::npos) {
    if (bytes.size() >= v1_max_length)
      return invalid{"PROXY v1: no CRLF within 107 bytes"};
    return need_more{bytes.size() < min_length ? min_length - bytes.size() : 1};
  }
  if (cr + 2 > v1_max_length)
    return invalid{"PROXY v1: no CRLF within 107 bytes"};
  if (cr + 1 == bytes.size())
    return need_more{1};
  if (bytes[cr + 1] != '\n')
    return invalid{"PROXY v1: a CR without its LF"};
  if (cr < v1_prefix.size())
    return invalid{"not a PROXY protocol header"};
  return v1_line(bytes.substr(0, cr), cr + 2);
}

std::uint16_t be16(const unsigned char* at) {
  return static_cast<std::uint16_t>(at[0] << 8 | at[1]);
}

result v2(std::string_view bytes, std::size_t max_length) {
  if (!may_begin(bytes, v2_signature))
    return invalid{"not a PROXY protocol header"};
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() > 12 && ((b[12] >> 4) != 2 || (b[12] & 0x0f) > 1))
    return invalid{"PROXY v2: not version 2, or a command other than LOCAL and PROXY"};
  constexpr std::array<unsigned char, 7> families{0x00, 0x11, 0x12, 0x21, 0x22, 0x31, 0x32};
  if (bytes.size() > 13 && std::find(families.begin(), families.end(), b[13]) == families.end())
    return invalid{"PROXY v2: an unknown address family or transport"};
  if (bytes.size() < v2_fixed_length)
    return need_more{v2_fixed_length - bytes.size()};
  const std::size_t length = v2_fixed_length + be16(b + 14);
  if (length > max_length)
    return invalid{"PROXY v2: longer than allowed (max_header_bytes)"};
  const bool proxy = (b[12] & 0x0f) == 1;
  const int family = b[13] >> 4;
  // The address block's size for each family (IPv4, IPv6, UNIX); TLVs may follow it.
  constexpr std::array<std::size_t, 4> address_bytes{0, 12, 36, 216};
  if (proxy && length - v2_fixed_length < address_bytes[family])
    return invalid{"PROXY v2: too short for its addresses"};
  if (bytes.size() < length)
    return need_more{length - bytes.size()};
  if (!proxy || family == 0 || family == 3)
    return local{length}; // LOCAL (a health check of the balancer's own), or nobody to name
  if (family == 1)
    return proxied{ip_from_bytes(b + 16, 4), be16(b + 24), length};
  return proxied{ip_from_bytes(b + 16, 16), be16(b + 48), length};
}

} // namespace

result parse(std::string_view bytes, std::size_t max_v2_length) {
  if (bytes.empty())
    return need_more{min_length};
  if (bytes[0] == 'P')
    return v1(bytes);
  if (bytes[0] == '\r')
    return v2(bytes, std::max(max_v2_length, v2_fixed_length));
  return invalid{"not a PROXY protocol header"};
}

} // namespace gather::proxy_protocol
