// A downstream call's header lines as one block (downstream_request.hpp): what the request adds,
// what is forwarded and how, the deadline header left for the call to write, and the edits a
// write route makes to the block (drop, add, read a value).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "gather/downstream/call/downstream_request.hpp"

using namespace gather;

namespace {

inbound_request request_with(std::initializer_list<std::pair<const std::string, std::string>> headers) {
  inbound_request in;
  in.request_id = "0123456789abcdef";
  in.headers = headers;
  return in;
}

} // namespace

TEST_CASE("a call's header lines: the request's own, then the forwarded ones, each ended by CRLF",
          "[unit][downstream][headers]") {
  auto in = request_with({{"x-tenant", "a\r\nX-Evil: 1"}, {"x-tenant", "b"}, {"x-other", "no"}});
  const auto lines = downstream_header_lines({"x-tenant", "x-missing"}, in);
  CHECK(lines == "X-Request-Id: 0123456789abcdef\r\n"
                 "Accept: application/json\r\n"
                 "x-tenant: a  X-Evil: 1\r\n"
                 "x-tenant: b\r\n");
  // With a trace: the gateway's traceparent line, never the client's.
  in.headers.emplace("traceparent", "00-11111111111111111111111111111111-2222222222222222-01");
  const std::string trace = "0a0b0c0d0e0f10111213141516171819", span = "2021222324252627";
  std::copy(trace.begin(), trace.end(), in.trace.trace_id.begin());
  std::copy(span.begin(), span.end(), in.trace.span_id.begin());
  in.trace.sampled = true;
  REQUIRE(in.trace.started());
  const auto traced = downstream_header_lines({"traceparent"}, in);
  CHECK(traced.find("traceparent: 00-0a0b0c0d0e0f10111213141516171819-2021222324252627-01\r\n") != std::string::npos);
  CHECK(traced.find("1111") == std::string::npos);
}

TEST_CASE("the deadline header is left out of the lines whatever its case, for each call to write",
          "[unit][downstream][headers]") {
  const auto in = request_with({{"x-deadline-ms", "99999"}, {"x-deadline-ms-extra", "kept"}});
  const auto lines = downstream_header_lines({"x-deadline-ms", "x-deadline-ms-extra"}, in, "X-Deadline-Ms");
  CHECK(lines.find("x-deadline-ms:") == std::string::npos);
  CHECK(lines.find("x-deadline-ms-extra: kept\r\n") != std::string::npos);
  CHECK(header_block(lines, "X-Deadline-Ms: 250").substr(lines.size()) == "X-Deadline-Ms: 250\r\n");
  CHECK(header_block(lines) == lines);
}

TEST_CASE("a block's lines dropped, added and read by name", "[unit][downstream][headers]") {
  std::string lines = "X-Request-Id: abc\r\nIdempotency-Key: old\r\ncontent-type: text/plain\r\n"
                      "idempotency-key: older\r\n";
  drop_header(lines, "idempotency-key");
  CHECK(lines == "X-Request-Id: abc\r\ncontent-type: text/plain\r\n");
  add_header(lines, "Idempotency-Key", "k1");
  CHECK(header_value(lines, "idempotency-key") == "k1");
  CHECK(header_value(lines, "x-request-id") == "abc");
  CHECK(header_value(lines, "x-request") == ""); // a prefix of a name is no name
  drop_header(lines, "nothing-of-the-kind");
  CHECK(lines == "X-Request-Id: abc\r\ncontent-type: text/plain\r\nIdempotency-Key: k1\r\n");
  std::string empty;
  drop_header(empty, "a");
  CHECK(empty.empty());
  CHECK(header_value(empty, "a").empty());
}
