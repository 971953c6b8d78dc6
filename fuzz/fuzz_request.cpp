// Fuzzes the inbound request parser (app/front/request_parser.cpp) and the connection's read
// buffer (include/gather/front/read_buffer.hpp) on whole byte streams, driven the way a connection
// drives them (app/front/connection_reading.hpp, parse()): a parser per request, bytes fed as they
// arrive, a body read only for a POST, pipelined requests parsed from what is left, and after each
// request a read ahead that is pending while the next requests are parsed and consumed (the
// interleaving that once let a pipelined request be parsed from another one's stale bytes).
// Input: byte 0 picks the limits (tiny ones reach every refusal), byte 1 seeds how the stream is
// cut into reads, the rest is the stream.
// Invariants: every request served keeps Gather's limits (line, header bytes and count, body),
// holds no control byte, is HTTP/1.0 or 1.1, has a body of its declared length, and was chunked
// when it named a Transfer-Encoding; every refusal has a reason; and the requests served (target,
// headers, body) are the same however the stream is cut into reads (same_requests: one exception,
// Beast's).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "fuzz_check.hpp"
#include "read_cuts.hpp"
#include "gather/front/read_buffer.hpp"
#include "gather/front/request_parser.hpp"

namespace {

/// What the connection would do with one request of the stream.
struct outcome {
  gather::parse_refusal refusal = gather::parse_refusal::none; ///< set: the answer, then close
  bool served = false;     ///< a whole request (a POST with its body)
  bool head_only = false;  ///< answered on the head, body unread, then close
  bool incomplete = false; ///< the stream ended inside it: the connection waits for more
  std::string method, target, body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool operator==(const outcome& o) const {
    return refusal == o.refusal && served == o.served && head_only == o.head_only &&
           incomplete == o.incomplete && method == o.method &&
           target == o.target && body == o.body && headers == o.headers;
  }
};

bool has_control(const std::string& s, bool tab_ok) {
  for (unsigned char c : s)
    if ((c < 0x20 && !(tab_ok && c == '\t')) || c == 0x7F)
      return true;
  return false;
}

std::vector<outcome>& ended(std::vector<outcome>& out, outcome& o) {
  o.incomplete = true;
  out.push_back(o);
  return out;
}

/// Cut differently, the same stream must give the same requests, with one exception that is
/// Beast's: its parser looks at the lines of a head as soon as it first gets bytes, but once it
/// has asked for more it waits for the head's end before it looks again. A malformed line that
/// came in the first read is refused at once (400); one that came later leaves the request
/// waiting for a head's end that never comes, and the head bound (414, 431) or the request
/// timeout ends it. Either way the connection ends without serving it.
bool same_requests(const std::vector<outcome>& a, const std::vector<outcome>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (!(a[i] == b[i]))
      return false;
  if (a.empty() || a.back() == b.back())
    return true;
  const auto refused = [](const outcome& o) { return o.refusal != gather::parse_refusal::none; };
  return (refused(a.back()) || a.back().incomplete) && (refused(b.back()) || b.back().incomplete);
}

std::vector<outcome> run(const gather::inbound_limits& limits, std::size_t max_body, const std::string& stream,
                         fuzz::read_cuts cut) {
  std::vector<outcome> out;
  // As the connection sizes it: a whole head at the limits plus one read.
  constexpr std::size_t read_chunk = 16384;
  gather::read_buffer buffer{limits.max_request_line_bytes + limits.max_header_bytes + read_chunk + 4};
  std::size_t fed = 0;
  std::optional<boost::asio::mutable_buffer> pending; // a read ahead the kernel has not filled yet
  const auto begin = [&] {
    if (!pending && fed < stream.size() && buffer.room() != 0)
      pending = buffer.begin_read(cut.next(stream.size() - fed));
  };
  const auto feed = [&] { // the pending read (or a new one) completes
    begin();
    if (!pending)
      return false;
    const auto n = std::min(pending->size(), stream.size() - fed);
    std::memcpy(pending->data(), stream.data() + fed, n);
    fed += n;
    buffer.end_read(n);
    pending.reset();
    return true;
  };
  // One request after another while bytes are left, as the connection's parse() loop does.
  while (buffer.size() != 0 || pending || fed < stream.size()) {
    gather::request_parser parser{limits, max_body};
    bool head_handled = false;
    outcome o;
    for (;;) {
      if (buffer.size() == 0 && !feed())
        return ended(out, o); // the stream ended inside a request: the connection waits, then times out
      boost::beast::error_code ec;
      const auto used = parser.put(buffer.data(), ec);
      FUZZ_CHECK(used <= buffer.size());
      buffer.consume(used);
      if (ec == boost::beast::http::error::need_more) {
        if (!feed())
          return ended(out, o);
        continue;
      }
      if (ec) {
        o.refusal = parser.refusal_for(ec);
        FUZZ_CHECK(o.refusal != gather::parse_refusal::none);
        out.push_back(o);
        return out; // refused: the answer says close
      }
      if (parser.is_header_done() && !head_handled) {
        head_handled = true;
        o.method = parser.head().method;
        o.target = parser.head().target;
        o.headers = parser.head().headers;
        if (!parser.is_done() && o.method != "POST") {
          o.head_only = true;
          out.push_back(o);
          return out; // a body nobody reads: answered, then close
        }
      }
      if (parser.is_done()) {
        o.served = true;
        o.body = parser.body();
        // The checks below need the parser itself.
        const auto& head = parser.head();
        FUZZ_CHECK(head.version == 10 || head.version == 11);
        FUZZ_CHECK(o.method.size() + o.target.size() + 10 <= limits.max_request_line_bytes);
        FUZZ_CHECK(!o.method.empty() && !has_control(o.method, false) && !has_control(o.target, false));
        FUZZ_CHECK(o.headers.size() <= limits.max_headers);
        std::size_t header_bytes = 0;
        for (const auto& [name, value] : o.headers) {
          header_bytes += name.size() + value.size() + 4;
          FUZZ_CHECK(!has_control(name, false) && !has_control(value, true));
          for (char c : name)
            FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
        }
        FUZZ_CHECK(header_bytes <= limits.max_header_bytes);
        FUZZ_CHECK(o.body.size() <= max_body);
        if (head.has_header("transfer-encoding"))
          FUZZ_CHECK(parser.chunked());
        else if (parser.content_length())
          FUZZ_CHECK(o.body.size() == *parser.content_length());
        else
          FUZZ_CHECK(o.body.empty());
        out.push_back(o);
        begin(); // the connection reads ahead while the request runs...
        break;   // ...and parses the next pipelined request from what is left before it ends
      }
      if (used == 0 && !feed())
        return ended(out, o);
    }
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  gather::inbound_limits limits;
  std::size_t max_body = 1024 * 1024;
  if (data[0] & 1) { // tiny limits, so that short inputs cross every one of them
    limits.max_request_line_bytes = 64;
    limits.max_header_bytes = 256;
    limits.max_headers = 1 + data[0] % 8;
    max_body = 1 + (data[0] >> 1) % 64;
  }
  const std::string stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto whole = run(limits, max_body, stream, fuzz::read_cuts{0});
  const auto pieces = run(limits, max_body, stream, fuzz::read_cuts{data[1] | 1u});
  FUZZ_CHECK(same_requests(whole, pieces));
  return 0;
}
