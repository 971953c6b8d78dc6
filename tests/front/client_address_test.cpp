// The client's address behind trusted proxies (gather/front/client_address.hpp): the walk of
// X-Forwarded-For and Forwarded, and what makes a header be passed over.
#include <catch2/catch.hpp>

#include <string>

#include "gather/front/client_address.hpp"

using gather::header_fields;

namespace {

gather::ip_ranges ca_ranges_of(std::initializer_list<const char*> texts) {
  gather::ip_ranges out;
  for (const char* text : texts) {
    auto parsed = gather::parse_cidr(text);
    REQUIRE(parsed.range);
    out.ranges.push_back(*parsed.range);
  }
  return out;
}

std::string ca_client_of(const char* peer, const header_fields& headers, const gather::ip_ranges& trusted) {
  const auto address = gather::parse_ip(peer);
  REQUIRE(address);
  return gather::to_string(gather::client_address(*address, headers, trusted));
}

} // namespace

TEST_CASE("client address: CIDR ranges of both families, IPv4-mapped peers included", "[unit][front][client]") {
  const auto trusted = ca_ranges_of({"10.0.0.0/8", "2001:db8::/32", "192.0.2.7"});
  CHECK(trusted.contains(*gather::parse_ip("10.255.0.1")));
  CHECK(trusted.contains(*gather::parse_ip("::ffff:10.1.2.3"))); // a dual-stack listener's peer
  CHECK_FALSE(trusted.contains(*gather::parse_ip("11.0.0.1")));
  CHECK(trusted.contains(*gather::parse_ip("2001:db8:ffff::1")));
  CHECK_FALSE(trusted.contains(*gather::parse_ip("2001:db9::1")));
  CHECK(trusted.contains(*gather::parse_ip("192.0.2.7")));
  CHECK_FALSE(trusted.contains(*gather::parse_ip("192.0.2.8")));
  CHECK(ca_ranges_of({"0.0.0.0/0"}).contains(*gather::parse_ip("203.0.113.9")));
  CHECK_FALSE(ca_ranges_of({"0.0.0.0/0"}).contains(*gather::parse_ip("2001:db8::1")));
  CHECK(ca_ranges_of({"10.0.0.0/9"}).contains(*gather::parse_ip("10.127.0.1")));
  CHECK_FALSE(ca_ranges_of({"10.0.0.0/9"}).contains(*gather::parse_ip("10.128.0.1")));
  for (const char* bad : {"10.0.0.0/33", "10.0.0.1/8", "::1/129", "gateway.local", "10.0.0.0/", "10.0.0.0/-1",
                          "10.0.0/8", "", "2001:db8::/32/1", "[::1]/128", "10.0.0.0/08x"})
    CHECK_FALSE(gather::parse_cidr(bad).range);
  CHECK(gather::parse_cidr("10.0.0.1/8").problem.find("10.0.0.0/8") != std::string::npos);
}

TEST_CASE("client address: from an untrusted peer no header is believed", "[unit][front][client]") {
  const auto trusted = ca_ranges_of({"10.0.0.0/8"});
  const header_fields spoof{{"x-forwarded-for", "1.2.3.4"}, {"forwarded", "for=5.6.7.8"}};
  CHECK(ca_client_of("203.0.113.5", spoof, trusted) == "203.0.113.5");
  CHECK(ca_client_of("10.0.0.1", spoof, {}) == "10.0.0.1"); // no trusted_proxies: nobody
}

TEST_CASE("client address: X-Forwarded-For's right-most untrusted entry, over every header in order",
          "[unit][front][client]") {
  const auto trusted = ca_ranges_of({"10.0.0.0/8", "2001:db8::/32"});
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "203.0.113.5"}}, trusted) == "203.0.113.5");
  // The client wrote a left-most entry of its choosing: the right-most untrusted one stands.
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "6.6.6.6, 198.51.100.2, 10.1.1.1"}}, trusted) ==
        "198.51.100.2");
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "6.6.6.6, 198.51.100.2"}, {"x-forwarded-for", "10.2.2.2"}},
                  trusted) == "198.51.100.2");
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "198.51.100.2"}, {"x-forwarded-for", " 203.0.113.9 ,10.2.2.2"}},
                  trusted) == "203.0.113.9");
  // Every entry trusted: the left-most.
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "10.9.9.9, 10.8.8.8"}}, trusted) == "10.9.9.9");
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "2001:db9::5, 2001:db8::1"}}, trusted) == "2001:db9::5");
  CHECK(ca_client_of("::ffff:10.0.0.1", {{"x-forwarded-for", "198.51.100.2"}}, trusted) == "198.51.100.2");
}

TEST_CASE("client address: a malformed X-Forwarded-For is passed over whole, for Forwarded or the peer",
          "[unit][front][client]") {
  const auto trusted = ca_ranges_of({"10.0.0.0/8"});
  for (const char* bad : {"unknown", "198.51.100.2, garbage", "198.51.100.2:443", "[2001:db8::1]", "", " , ",
                          "198.51.100.2,,1.1.1.1", "1.2.3.4 5.6.7.8", "01.2.3.4", "1.2.3.4%eth0", "\"1.2.3.4\""}) {
    INFO(bad);
    CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", bad}}, trusted) == "10.0.0.1");
    CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", bad}, {"forwarded", "for=203.0.113.4"}}, trusted) ==
          "203.0.113.4");
  }
  // One bad header of two: both are one list, passed over together.
  CHECK(ca_client_of("10.0.0.1", {{"x-forwarded-for", "198.51.100.2"}, {"x-forwarded-for", "nope"}}, trusted) ==
        "10.0.0.1");
}

TEST_CASE("client address: Forwarded's for= values, quoted, bracketed and with ports", "[unit][front][client]") {
  const auto trusted = ca_ranges_of({"10.0.0.0/8", "2001:db8::/32"});
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"}}, trusted) ==
        "192.0.2.60");
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", R"(for="[2001:db9:cafe::17]:4711")"}}, trusted) == "2001:db9:cafe::17");
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", R"(For="192.0.2.60:8080", for=10.3.3.3)"}}, trusted) == "192.0.2.60");
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", "for=6.6.6.6, for=198.51.100.7"}, {"forwarded", "for=10.4.4.4;proto=https"}},
                  trusted) == "198.51.100.7");
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", R"(for="[2001:db8::9]", for=10.0.0.2)"}}, trusted) == "2001:db8::9");
  // X-Forwarded-For, when usable, comes first.
  CHECK(ca_client_of("10.0.0.1", {{"forwarded", "for=198.51.100.7"}, {"x-forwarded-for", "203.0.113.1"}}, trusted) ==
        "203.0.113.1");
  for (const char* bad : {"for=unknown", "for=_hidden", "for=\"_gazonk\"", "proto=https",
                          "for=198.51.100.7, proto=https", "for=1.2.3.4;for=5.6.7.8", "for=\"[2001:db8::1\"",
                          "for=\"[2001:db8::1]:_port\"", "for=[1.2.3.4]", "for=\"1.2.3.4", "for=1.2.3.4:99999x", "for=1.2.3.4:65536", "garbage"}) {
    INFO(bad);
    CHECK(ca_client_of("10.0.0.1", {{"forwarded", bad}}, trusted) == "10.0.0.1");
  }
}
