// How the downstream client reads an answer: Beast's HTTP/1.1 parser under Gather's caps, keeping
// only what the client uses, and what a read that failed means for the call. Shared by the client
// and its fuzz target.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <ostream> // boost/core/detail/string_view.hpp (1.81) uses std::ostream without including it
#include <boost/beast/http/basic_parser.hpp>

namespace gather {

/// A downstream's answer as the client reads it: Beast's parser (the framing by Content-Length,
/// chunked or the connection's end; keep-alive; the caps) keeping the status and the body, nothing
/// else. The header lines are parsed and checked by Beast but not stored: the client reads none of
/// them (Beast's own response_parser keeps every one in a map, allocations per field per call).
class response_parser final : public boost::beast::http::basic_parser<false> {
public:
  /// `body_slack`: spare capacity reserved after the body (its length announced, or chunk by chunk).
  explicit response_parser(std::size_t body_slack = 0) : body_slack_(body_slack) {}

  /// The status code; 0 until the status line is parsed.
  unsigned status() const { return status_; }
  /// The body so far (whole once is_done()).
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }

private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;
  using field = boost::beast::http::field;
  using verb = boost::beast::http::verb;

  void on_request_impl(verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override {
    status_ = static_cast<unsigned>(code);
  }
  void on_field_impl(field, string_view, string_view, error_code&) override {}
  void on_header_impl(error_code&) override {}
  /// Reserved once when the length is known (Beast has refused a length over the body's cap by then).
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length)
      body_.reserve(static_cast<std::size_t>(*length) + body_slack_);
  }
  std::size_t on_body_impl(string_view piece, error_code&) override { return append(piece); }
  /// Room for a chunk before its bytes come (Beast has held its size to what is left of the body's
  /// cap), and the slack after it; growing at least twofold, so many small chunks are not copied
  /// over and over.
  void on_chunk_header_impl(std::uint64_t size, string_view, error_code&) override {
    const auto wanted = body_.size() + static_cast<std::size_t>(size) + body_slack_;
    if (wanted > body_.capacity())
      body_.reserve(std::max(wanted, 2 * body_.capacity()));
  }
  std::size_t on_chunk_body_impl(std::uint64_t, string_view piece, error_code&) override {
    return append(piece);
  }
  void on_finish_impl(error_code&) override {}

  std::size_t append(string_view piece) {
    body_.append(piece.data(), piece.size());
    return piece.size();
  }

  std::size_t body_slack_;
  unsigned status_ = 0;
  std::string body_;
};

/// Largest response head accepted from a downstream: status line and header lines together.
constexpr std::uint32_t max_response_head_bytes = 65536;

/// The caps: the head at `max_head_bytes`, the body (any framing) at `max_body_bytes`. (The client
/// always uses max_response_head_bytes; its fuzz target a smaller one, to reach it.)
void limit_response(boost::beast::http::basic_parser<false>& parser, std::size_t max_body_bytes,
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

read_failure classify_read_failure(const boost::beast::http::basic_parser<false>& parser,
                                   const boost::system::error_code& ec);

} // namespace gather
