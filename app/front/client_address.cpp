#include "gather/front/client_address.hpp"

#include <algorithm>

#include "gather/values/header_text.hpp"

namespace gather {

namespace {

/// Splits at `separator` outside double quotes (a backslash escapes inside them).
std::vector<std::string_view> split_outside_quotes(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted && c == '\\')
      ++i;
    else if (c == '"')
      quoted = !quoted;
    else if (!quoted && c == separator) {
      pieces.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  pieces.push_back(text.substr(std::min(start, text.size())));
  return pieces;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower_ascii(x) == lower_ascii(y); });
}

/// A quoted-string's content with its escapes undone; the text as is when not quoted.
std::optional<std::string> unquoted(std::string_view value) {
  if (value.empty() || value.front() != '"')
    return std::string(value);
  if (value.size() < 2 || value.back() != '"')
    return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i + 1 < value.size(); ++i) {
    if (value[i] == '\\' && i + 2 < value.size())
      ++i;
    out.push_back(value[i]);
  }
  return out;
}

bool is_port(std::string_view text) {
  return !text.empty() && text.size() <= 5 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoi(std::string(text)) <= 65535;
}

/// A Forwarded node (RFC 7239 6): `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]`, `[2001:db8::1]:80`.
/// An obfuscated port (`_abc`) is not a number: not an address either.
std::optional<ip_address> node_address(std::string_view node) {
  if (!node.empty() && node.front() == '[') {
    const auto close = node.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    const auto after = node.substr(close + 1);
    if (!after.empty() && (after.front() != ':' || !is_port(after.substr(1))))
      return std::nullopt;
    const auto inside = node.substr(1, close - 1);
    if (inside.find(':') == std::string_view::npos)
      return std::nullopt; // brackets hold IPv6 only
    return parse_ip(inside);
  }
  const auto colon = node.find(':');
  if (colon != std::string_view::npos && node.find(':', colon + 1) == std::string_view::npos) {
    if (!is_port(node.substr(colon + 1)))
      return std::nullopt;
    node = node.substr(0, colon); // IPv4 with a port
  }
  return parse_ip(node);
}

/// The `for=` address of one Forwarded element; nullopt unless it has exactly one, an address.
std::optional<ip_address> element_for(std::string_view element) {
  std::optional<ip_address> found;
  int seen = 0;
  for (const auto pair : split_outside_quotes(element, ';')) {
    const auto text = trim_ows(pair);
    const auto equals = text.find('=');
    if (equals == std::string_view::npos || !ascii_iequals(trim_ows(text.substr(0, equals)), "for"))
      continue;
    if (++seen > 1)
      return std::nullopt;
    const auto value = unquoted(trim_ows(text.substr(equals + 1)));
    if (!value)
      return std::nullopt;
    found = node_address(*value);
  }
  return seen == 1 ? found : std::nullopt;
}

} // namespace

namespace {

/// Every field `lower_name` of `headers` split at its commas, each entry read by `address_of`; one
/// entry that is not an address passes the whole chain over.
template <class Read>
std::optional<std::vector<ip_address>> chain_of(const header_fields& headers, std::string_view lower_name,
                                                Read address_of) {
  std::vector<ip_address> chain;
  bool any = false;
  for (const auto& [name, value] : headers) {
    if (name != lower_name)
      continue;
    any = true;
    for (const auto entry : split_outside_quotes(value, ',')) {
      const auto address = address_of(entry);
      if (!address)
        return std::nullopt;
      chain.push_back(*address);
    }
  }
  if (!any)
    return std::nullopt;
  return chain;
}

} // namespace

std::optional<std::vector<ip_address>> forwarded_for_chain(const header_fields& headers) {
  return chain_of(headers, "x-forwarded-for", [](std::string_view entry) { return parse_ip(trim_ows(entry)); });
}

std::optional<std::vector<ip_address>> forwarded_chain(const header_fields& headers) {
  return chain_of(headers, "forwarded", element_for);
}

ip_address untrusted_end(const std::vector<ip_address>& chain, const ip_ranges& trusted) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if (!trusted.contains(*it))
      return *it;
  return chain.front();
}

ip_address client_address(const ip_address& peer, const header_fields& headers, const ip_ranges& trusted) {
  if (trusted.empty() || !trusted.contains(peer))
    return peer; // from anyone else no forwarded header is believed
  if (auto chain = forwarded_for_chain(headers))
    return untrusted_end(*chain, trusted);
  if (auto chain = forwarded_chain(headers))
    return untrusted_end(*chain, trusted);
  return peer;
}

} // namespace gather
