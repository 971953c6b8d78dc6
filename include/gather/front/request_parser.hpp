// One inbound HTTP/1.1 request, parsed by Beast's basic_parser with Gather's limits applied as it
// goes: request line (414), header bytes and count (431), control bytes (400), body size (413).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <ostream> // boost/core/detail/string_view.hpp (1.81) uses std::ostream without including it
#include <boost/beast/http/basic_parser.hpp>

#include "gather/config/config.hpp"
#include "gather/values/request_head.hpp"

namespace gather {

/// Why a request was refused while it was being parsed; `none` while all is well.
enum class parse_refusal { none, bad_request, uri_too_long, headers_too_large, payload_too_large };

class request_parser : public boost::beast::http::basic_parser<true> {
public:
  /// `max_body_bytes` bounds the body as it arrives, chunked or not.
  request_parser(const inbound_limits& limits, std::size_t max_body_bytes);

  request_head& head() { return head_; }
  std::string& body() { return body_; }
  /// Set when parsing failed because a limit or a rule of Gather's was crossed.
  parse_refusal refusal() const { return refusal_; }
  /// The refusal a Beast error stands for.
  parse_refusal refusal_for(boost::beast::error_code ec) const;

private:
  void on_request_impl(boost::beast::http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int version,
                       boost::beast::error_code& ec) override;
  void on_response_impl(int, boost::beast::string_view, int, boost::beast::error_code&) override {}
  void on_field_impl(boost::beast::http::field, boost::beast::string_view name,
                     boost::beast::string_view value, boost::beast::error_code& ec) override;
  void on_header_impl(boost::beast::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         boost::beast::error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view,
                            boost::beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                 boost::beast::error_code& ec) override;
  void on_finish_impl(boost::beast::error_code&) override {}

  void refuse(parse_refusal why, boost::beast::error_code& ec);
  std::size_t append_body(boost::beast::string_view body, boost::beast::error_code& ec);

  const inbound_limits& limits_;
  std::size_t max_body_bytes_;
  std::size_t header_bytes_ = 0;
  bool line_done_ = false; ///< the request line has been read
  request_head head_;
  std::string body_;
  parse_refusal refusal_ = parse_refusal::none;
};

} // namespace gather
