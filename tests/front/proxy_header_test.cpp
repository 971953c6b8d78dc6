// The PROXY protocol header parser (gather/front/proxy_header.hpp), fed bytes written out by hand
// from HAProxy's specification: versions 1 and 2, IPv4 and IPv6, LOCAL and UNKNOWN, TLVs,
// truncated, oversized and not a header at all.
#include <catch2/catch.hpp>

#include <string>

#include "gather/front/proxy_header.hpp"
#include "support/proxy_bytes.hpp"

namespace pp = gather::proxy_protocol;

namespace {

constexpr std::size_t proxy_test_max = 16384;
const std::string& pp_v2_sig = gather::test::proxy_v2_signature;
using gather::test::be16;

std::string pp_v2_header(char command, char family, const std::string& body) {
  return gather::test::proxy_v2_header(command, family, body);
}

std::string pp_v2_inet_body() { // 192.0.2.1:56324 -> 10.0.0.1:443
  return std::string{"\xc0\x00\x02\x01\x0a\x00\x00\x01", 8} + be16(56324) + be16(443);
}

std::string pp_v2_inet6_body() { // [2001:db8::1]:4711 -> [2001:db8::2]:443
  return gather::test::ipv6_doc_address(1) + gather::test::ipv6_doc_address(2) + be16(4711) + be16(443);
}

pp::proxied pp_named(const pp::result& r) {
  REQUIRE(std::holds_alternative<pp::proxied>(r));
  return std::get<pp::proxied>(r);
}

bool pp_is_invalid(const pp::result& r) { return std::holds_alternative<pp::invalid>(r); }

std::size_t pp_more_needed(const pp::result& r) {
  REQUIRE(std::holds_alternative<pp::need_more>(r));
  return std::get<pp::need_more>(r).at_least;
}

} // namespace

TEST_CASE("PROXY v1: TCP4 and TCP6 name the source, and the bytes after the line are not taken", "[unit][front][proxy]") {
  const std::string line = "PROXY TCP4 192.0.2.1 10.0.0.1 56324 443\r\n";
  auto r = pp_named(pp::parse(line + "GET / HTTP/1.1\r\n", proxy_test_max));
  CHECK(gather::to_string(r.source) == "192.0.2.1");
  CHECK(r.source_port == 56324);
  CHECK(r.length == line.size());
  const std::string six = "PROXY TCP6 2001:db8::1 2001:db8::2 4711 443\r\n";
  auto r6 = pp_named(pp::parse(six, proxy_test_max));
  CHECK(gather::to_string(r6.source) == "2001:db8::1");
  CHECK(r6.length == six.size());
}

TEST_CASE("PROXY v1: UNKNOWN leaves the TCP peer, whatever follows it on the line", "[unit][front][proxy]") {
  const auto r = pp::parse("PROXY UNKNOWN\r\n", proxy_test_max);
  REQUIRE(std::holds_alternative<pp::local>(r));
  CHECK(std::get<pp::local>(r).length == 15);
  const std::string longer = "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";
  CHECK(std::get<pp::local>(pp::parse(longer, proxy_test_max)).length == longer.size());
}

TEST_CASE("PROXY v1: a truncated line asks for more, never past its end", "[unit][front][proxy]") {
  CHECK(pp_more_needed(pp::parse("", proxy_test_max)) == pp::min_length);
  CHECK(pp_more_needed(pp::parse("PROX", proxy_test_max)) == pp::min_length - 4);
  CHECK(pp_more_needed(pp::parse("PROXY TCP4 192.0.2.1 10.0.0.1 56324 443", proxy_test_max)) == 1);
  CHECK(pp_more_needed(pp::parse("PROXY TCP4 192.0.2.1 10.0.0.1 56324 443\r", proxy_test_max)) == 1);
}

TEST_CASE("PROXY v1: malformed lines are invalid as soon as their bytes show it", "[unit][front][proxy]") {
  CHECK(pp_is_invalid(pp::parse("PROXX", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("GET / HTTP/1.1\r\n", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY UDP4", proxy_test_max)));
  // fuzz_proxy's first finding: a wrong protocol word followed by a CR at the end of the bytes
  // read was "need more" instead of invalid (fuzz/corpus/proxy/finding_v1_word_then_cr).
  CHECK(pp_is_invalid(pp::parse("PROXY TCP5 192.0.2.1 10.0.0.1 56324 443\r", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4\n", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4 5.6.7.8 080 80\r\n", proxy_test_max)));   // leading zero
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4 5.6.7.8 65536 80\r\n", proxy_test_max))); // too big
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", proxy_test_max)));     // two spaces
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n", proxy_test_max)));  // other family
  CHECK(pp_is_invalid(pp::parse("PROXY TCP6 1.2.3.4 2001:db8::2 1 2\r\n", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", proxy_test_max)));
  // Oversized: no CRLF within 107 bytes.
  CHECK(pp_is_invalid(pp::parse("PROXY UNKNOWN " + std::string(93, 'x'), proxy_test_max)));
  CHECK(pp_more_needed(pp::parse("PROXY UNKNOWN " + std::string(92, 'x'), proxy_test_max)) == 1);
  CHECK(std::holds_alternative<pp::local>(pp::parse("PROXY UNKNOWN " + std::string(91, 'x') + "\r\n", proxy_test_max)));
  // fuzz_proxy's second finding: a CR as the 107th byte made a 108-byte line
  // (fuzz/corpus/proxy/finding_v1_108_bytes).
  CHECK(pp_is_invalid(pp::parse("PROXY UNKNOWN " + std::string(92, 'x') + "\r", proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse("PROXY UNKNOWN " + std::string(92, 'x') + "\r\n", proxy_test_max)));
}

TEST_CASE("PROXY v2: PROXY over IPv4 and IPv6 names the source, TLVs are skipped whole", "[unit][front][proxy]") {
  const auto four = pp_v2_header('\x21', '\x11', pp_v2_inet_body());
  auto r = pp_named(pp::parse(four + "\x16\x03\x01", proxy_test_max));
  CHECK(gather::to_string(r.source) == "192.0.2.1");
  CHECK(r.source_port == 56324);
  CHECK(r.length == 28);
  // ALPN and authority TLVs after the addresses: the header's length covers them.
  const std::string tlvs = std::string{"\x01\x00\x02h2\x02\x00\x0bexample.com", 19};
  const auto six = pp_v2_header('\x21', '\x21', pp_v2_inet6_body() + tlvs);
  auto r6 = pp_named(pp::parse(six, proxy_test_max));
  CHECK(gather::to_string(r6.source) == "2001:db8::1");
  CHECK(r6.source_port == 4711);
  CHECK(r6.length == 16 + 36 + tlvs.size());
  // A UDP (DGRAM) source is still the client's address.
  CHECK(gather::to_string(pp_named(pp::parse(pp_v2_header('\x21', '\x12', pp_v2_inet_body()), proxy_test_max)).source) ==
        "192.0.2.1");
}

TEST_CASE("PROXY v2: LOCAL, UNSPEC and UNIX leave the TCP peer", "[unit][front][proxy]") {
  const auto local = pp::parse(pp_v2_header('\x20', '\x00', ""), proxy_test_max);
  REQUIRE(std::holds_alternative<pp::local>(local));
  CHECK(std::get<pp::local>(local).length == 16);
  // LOCAL with an address block (a balancer's health check may send one): skipped.
  CHECK(std::get<pp::local>(pp::parse(pp_v2_header('\x20', '\x11', pp_v2_inet_body()), proxy_test_max)).length == 28);
  CHECK(std::holds_alternative<pp::local>(pp::parse(pp_v2_header('\x21', '\x00', ""), proxy_test_max)));
  CHECK(std::holds_alternative<pp::local>(pp::parse(pp_v2_header('\x21', '\x31', std::string(216, 'u')), proxy_test_max)));
}

TEST_CASE("PROXY v2: truncated asks for exactly what is missing, broken or oversized is invalid at once",
          "[unit][front][proxy]") {
  const auto four = pp_v2_header('\x21', '\x11', pp_v2_inet_body());
  CHECK(pp_more_needed(pp::parse(four.substr(0, 5), proxy_test_max)) == 11);
  CHECK(pp_more_needed(pp::parse(four.substr(0, 16), proxy_test_max)) == 12);
  CHECK(pp_more_needed(pp::parse(four.substr(0, 27), proxy_test_max)) == 1);
  // Wrong signature, version, command, family.
  auto wrong = four;
  wrong[8] = 'X';
  CHECK(pp_is_invalid(pp::parse(wrong.substr(0, 9), proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + '\x11', proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + '\x22', proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + '\x21' + '\x41', proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + '\x21' + '\x13', proxy_test_max)));
  // Too short for its addresses; longer than allowed (seen from the length field alone).
  CHECK(pp_is_invalid(pp::parse(pp_v2_header('\x21', '\x11', std::string(11, 'a')), proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_header('\x21', '\x21', pp_v2_inet_body()), proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + "\x21\x11" + be16(65535), proxy_test_max)));
  CHECK(pp_is_invalid(pp::parse(pp_v2_sig + "\x21\x11" + be16(300), 256)));
  CHECK(pp_more_needed(pp::parse(pp_v2_sig + "\x21\x11" + be16(240), 256)) == 240);
  // Neither version's first byte.
  CHECK(pp_is_invalid(pp::parse("\x16\x03\x01", proxy_test_max)));
}
