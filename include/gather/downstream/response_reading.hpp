// How the downstream client reads an answer: Beast's response parser under Gather's caps, and
// what a read that failed means for the call. Shared by the client and its fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>

#include <ostream> // boost/core/detail/string_view.hpp (1.81) uses std::ostream without including it
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace gather {

using response_parser = boost::beast::http::response_parser<boost::beast::http::string_body>;

/// Largest response head accepted from a downstream: status line and header lines together.
constexpr std::uint32_t max_response_head_bytes = 65536;

/// The caps: the head at `max_head_bytes`, the body (any framing) at `max_body_bytes`. (The client
/// always uses max_response_head_bytes; its fuzz target a smaller one, to reach it.)
void limit_response(response_parser& parser, std::size_t max_body_bytes,
                    std::uint32_t max_head_bytes = max_response_head_bytes);

/// Whether the bytes the parser took for a head (what Beast's read_header reports) fit the cap.
/// Beast's own header limit counts the status line and the header lines apart when they come in
/// one read, so a head of up to twice the cap passes it (fuzz_response found this); the client
/// reads the head first and holds the whole of it to the cap here.
inline bool head_within_cap(std::size_t head_bytes, std::uint32_t max_head_bytes = max_response_head_bytes) {
  return head_bytes <= max_head_bytes;
}

/// What a failed read of an answer means.
enum class read_failure {
  too_large,          ///< the body passed its cap: the call's error, not retried
  lost_before_answer, ///< the connection ended before any byte of an answer (a pooled one may be retried once)
  malformed,          ///< not HTTP as Beast's parser reads it: the call's error, not retried
  ended,              ///< the connection failed or ended inside the answer
};

read_failure classify_read_failure(const response_parser& parser, const boost::system::error_code& ec);

} // namespace gather
