// Fuzzes the downstream response parser as the client reads an answer
// (include/gather/downstream/response_reading.hpp): Beast's parser under Gather's caps, keeping
// the status and the body only, against Beast's own response parser on the same bytes; read with
// Beast's own read loop from a stream that delivers the bytes in pieces and then ends (so
// close-delimited bodies end too). Input: byte 0 picks the caps (tiny ones reach both), byte 1
// seeds how the bytes are cut into reads, the rest is what the downstream sends.
// Invariants: both parsers give the same answer (status, body, keep-alive) or the same error; an
// answer that parsed keeps both caps, has a body of its declared length, and a status of three
// digits; a failure has a meaning (body cap -> too_large, nothing sent -> lost before the answer);
// the outcome is the same however the bytes are cut into reads (same_as: one exception, Beast's).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "fuzz_check.hpp"
#include "read_cuts.hpp"
#include "gather/downstream/h1/response_reading.hpp"

namespace {

using boost::system::error_code;

/// A downstream's bytes as a socket would deliver them: pieces of 1..64 bytes (or all at once),
/// then the end of the stream.
class piecewise_stream {
public:
  piecewise_stream(const std::string& bytes, std::uint32_t seed) : bytes_(bytes), cuts_{seed} {}

  template <class Buffers>
  std::size_t read_some(const Buffers& buffers, error_code& ec) {
    ec = {};
    if (at_ == bytes_.size()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    std::size_t n = bytes_.size() - at_;
    n = cuts_.next(n);
    n = boost::asio::buffer_copy(buffers, boost::asio::buffer(bytes_.data() + at_, n));
    at_ += n;
    return n;
  }
  template <class Buffers>
  std::size_t read_some(const Buffers& buffers) {
    error_code ec;
    const auto n = read_some(buffers, ec);
    if (ec)
      throw boost::system::system_error(ec);
    return n;
  }

private:
  const std::string& bytes_;
  std::size_t at_ = 0;
  fuzz::read_cuts cuts_;
};

struct outcome {
  bool ok = false;
  gather::read_failure failure{};
  unsigned status = 0;
  std::string body;
  bool keep_alive = false;
  /// Cut differently, the same bytes must give the same answer, with one exception that is
  /// Beast's: its parser looks at the head's lines as soon as it first gets bytes, but once it has
  /// asked for more it waits for the head's end before it looks again. A malformed line in the
  /// first read is `malformed` at once; one that came later waits for a head's end, and the end
  /// of the stream makes it `ended`. Either way the call fails and nothing of it is used.
  bool same_as(const outcome& o) const {
    if (ok != o.ok)
      return false;
    if (ok)
      return status == o.status && body == o.body && keep_alive == o.keep_alive;
    const auto either = [](gather::read_failure f) {
      return f == gather::read_failure::malformed || f == gather::read_failure::ended;
    };
    return failure == o.failure || (either(failure) && either(o.failure));
  }
};

/// Reads as the client does: the head first, held to the cap (`head_over_cap` when it is not),
/// then the rest.
template <class Parser>
error_code read_as_client(const std::string& bytes, std::uint32_t seed, Parser& parser, std::size_t max_body,
                          std::uint32_t max_head, bool& head_over_cap) {
  piecewise_stream stream{bytes, seed};
  boost::beast::flat_buffer buffer;
  gather::limit_response(parser, max_body, max_head);
  error_code ec;
  const auto head_bytes = boost::beast::http::read_header(stream, buffer, parser, ec);
  head_over_cap = !ec && !gather::head_within_cap(head_bytes, max_head);
  if (!ec && !head_over_cap)
    boost::beast::http::read(stream, buffer, parser, ec);
  return ec;
}

outcome read_one(const std::string& bytes, std::uint32_t seed, std::size_t max_body, std::uint32_t max_head) {
  // The client's parser keeps only the status and the body; Beast's own, which keeps every header,
  // reads the same bytes alongside: both must come to the same answer, or fail the same way.
  gather::response_parser parser;
  boost::beast::http::response_parser<boost::beast::http::string_body> reference;
  bool over = false;
  bool reference_over = false;
  const auto ec = read_as_client(bytes, seed, parser, max_body, max_head, over);
  const auto reference_ec = read_as_client(bytes, seed, reference, max_body, max_head, reference_over);
  FUZZ_CHECK(ec == reference_ec && over == reference_over);
  outcome o;
  if (over) {
    o.failure = gather::read_failure::malformed;
    return o;
  }
  if (ec) {
    o.failure = gather::classify_read_failure(parser, ec);
    FUZZ_CHECK(o.failure == gather::classify_read_failure(reference, ec));
    if (ec == boost::beast::http::error::body_limit)
      FUZZ_CHECK(o.failure == gather::read_failure::too_large);
    if (bytes.empty())
      FUZZ_CHECK(o.failure == gather::read_failure::lost_before_answer);
    return o;
  }
  FUZZ_CHECK(parser.is_done());
  const auto& response = reference.get();
  o.ok = true;
  o.status = parser.status();
  o.body = parser.body();
  o.keep_alive = parser.keep_alive();
  FUZZ_CHECK(o.status == response.result_int());
  FUZZ_CHECK(o.body == response.body());
  FUZZ_CHECK(o.keep_alive == reference.keep_alive());
  FUZZ_CHECK(o.status <= 999);
  FUZZ_CHECK(o.body.size() <= max_body);
  // (1xx, 204 and 304 have no body whatever they declare.)
  const bool bodiless = o.status / 100 == 1 || o.status == 204 || o.status == 304;
  if (!parser.chunked() && parser.content_length() && !bodiless)
    FUZZ_CHECK(o.body.size() == *parser.content_length());
  if (bodiless)
    FUZZ_CHECK(o.body.empty());
  std::size_t head = 0;
  for (const auto& field : response)
    head += field.name_string().size() + field.value().size() + 4;
  FUZZ_CHECK(head <= max_head);
  return o;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  std::size_t max_body = 8 * 1024 * 1024;
  std::uint32_t max_head = gather::max_response_head_bytes;
  if (data[0] & 1) { // tiny caps, so that short inputs cross them
    max_body = (data[0] >> 1) % 64;
    max_head = 16 + (data[0] >> 1) % 256;
  }
  const std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto whole = read_one(bytes, 0, max_body, max_head);
  const auto pieces = read_one(bytes, data[1] | 1u, max_body, max_head);
  FUZZ_CHECK(whole.same_as(pieces));
  return 0;
}
