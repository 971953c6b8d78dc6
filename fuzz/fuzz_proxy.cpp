// Fuzzes the PROXY protocol header parser (app/front/proxy_header.cpp), fed as a connection feeds
// it: every prefix of the input, as if the bytes came one at a time.
// Invariants: a prefix asked for `at_least` more bytes is not complete before it has them; once a
// prefix is invalid every longer one is; once complete, every longer one gives the same header
// (the bytes after it are never the header's); a header is never longer than its version allows
// nor than the bytes given; a v1 header's source address reads back from its own text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_check.hpp"
#include "gather/front/proxy_header.hpp"

namespace {

namespace pp = gather::proxy_protocol;

std::size_t length_of(const pp::result& r) {
  if (const auto* named = std::get_if<pp::proxied>(&r))
    return named->length;
  if (const auto* none = std::get_if<pp::local>(&r))
    return none->length;
  return 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first byte picks the v2 limit (max_header_bytes is 256 at the least), the rest is the wire.
  if (input.empty())
    return 0;
  const std::size_t max_length = 256 + static_cast<unsigned char>(input[0]) * 64;
  const auto wire = input.substr(1);
  bool was_invalid = false;
  std::size_t done_at = 0; // the length of the header once complete
  pp::result complete;
  std::size_t quiet_until = 0; // a prefix shorter than this was told to wait for more
  for (std::size_t n = 0; n <= wire.size(); ++n) {
    const auto r = pp::parse(wire.substr(0, n), max_length);
    if (was_invalid) {
      FUZZ_CHECK(std::holds_alternative<pp::invalid>(r));
      continue;
    }
    if (done_at != 0) {
      FUZZ_CHECK(length_of(r) == done_at);
      FUZZ_CHECK(r.index() == complete.index());
      if (const auto* named = std::get_if<pp::proxied>(&r))
        FUZZ_CHECK(named->source == std::get<pp::proxied>(complete).source &&
                   named->source_port == std::get<pp::proxied>(complete).source_port);
      continue;
    }
    if (n < quiet_until)
      FUZZ_CHECK(length_of(r) == 0);
    if (const auto* more = std::get_if<pp::need_more>(&r)) {
      FUZZ_CHECK(more->at_least >= 1);
      quiet_until = n + more->at_least;
      continue;
    }
    if (std::holds_alternative<pp::invalid>(r)) {
      FUZZ_CHECK(*std::get<pp::invalid>(r).why != '\0');
      was_invalid = true;
      continue;
    }
    done_at = length_of(r);
    complete = r;
    FUZZ_CHECK(done_at == n); // complete on the very byte that ends it, never before or after
    FUZZ_CHECK(done_at >= pp::min_length);
    if (wire[0] == 'P') {
      FUZZ_CHECK(done_at <= pp::v1_max_length);
      FUZZ_CHECK(wire.substr(done_at - 2, 2) == "\r\n");
      if (const auto* named = std::get_if<pp::proxied>(&r)) {
        const auto text = gather::to_string(named->source);
        FUZZ_CHECK(gather::parse_ip(text) == named->source);
        FUZZ_CHECK(std::string(wire.substr(0, done_at)).find(" " + std::to_string(named->source_port) + " ") !=
                   std::string::npos);
      }
    } else {
      FUZZ_CHECK(done_at <= max_length);
    }
  }
  return 0;
}
