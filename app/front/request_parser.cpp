#include "gather/front/request_parser.hpp"

#include <algorithm>

#include <boost/beast/http/error.hpp>

namespace gather {

namespace {

namespace http = boost::beast::http;

std::string lower(boost::beast::string_view text) {
  std::string out(text.data(), text.size());
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

} // namespace

request_parser::request_parser(const inbound_limits& limits, std::size_t max_body_bytes)
  : limits_(limits), max_body_bytes_(max_body_bytes) {
  // Beast's own bound on the whole head; Gather's finer limits below decide which code it gets.
  header_limit(static_cast<std::uint32_t>(limits.max_request_line_bytes + limits.max_header_bytes + 4));
  // No Beast body limit: it would refuse a declared Content-Length before the head's checks that
  // come first (route, method); the dispatch checks the declared size, append_body the real one.
  body_limit(boost::none);
}

void request_parser::refuse(parse_refusal why, boost::beast::error_code& ec) {
  refusal_ = why;
  ec = http::error::bad_value;
}

void request_parser::on_request_impl(http::verb, boost::beast::string_view method,
                                     boost::beast::string_view target, int version,
                                     boost::beast::error_code& ec) {
  // "METHOD SP target SP HTTP/1.1"
  if (method.size() + target.size() + 10 > limits_.max_request_line_bytes)
    return refuse(parse_refusal::uri_too_long, ec);
  // No control byte can be here: Beast's parser refuses NUL, 0x01-0x1F and 0x7F in the method (a
  // token), the target (its pathchar table) and, below, a field's name (a token) and value (only a
  // tab allowed), each as a parse error answered 400 (tests/front/hostile_inbound_heads_test.cpp).
  head_.method.assign(method.data(), method.size());
  head_.target.assign(target.data(), target.size());
  head_.version = version;
  line_done_ = true;
}

void request_parser::on_field_impl(http::field, boost::beast::string_view name,
                                   boost::beast::string_view value, boost::beast::error_code& ec) {
  header_bytes_ += name.size() + value.size() + 4; // "name: value\r\n"
  if (header_bytes_ > limits_.max_header_bytes || head_.headers.size() >= limits_.max_headers)
    return refuse(parse_refusal::headers_too_large, ec);
  if (head_.headers.empty()) // one allocation for a usual head, not one per doubling (each moving every pair)
    head_.headers.reserve(std::min<std::size_t>(limits_.max_headers, 16));
  head_.headers.emplace_back(lower(name), std::string(value.data(), value.size()));
}

void request_parser::on_header_impl(boost::beast::error_code& ec) {
  // A Transfer-Encoding whose last coding is not chunked leaves the body's end unknown: RFC 9112
  // §6.3 says 400 and close (read as "no body", its bytes would become the next request).
  if (head_.has_header("transfer-encoding") && !chunked())
    refuse(parse_refusal::bad_request, ec);
}

void request_parser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                       boost::beast::error_code&) {
  if (content_length && *content_length <= max_body_bytes_)
    body_.reserve(static_cast<std::size_t>(*content_length));
}

std::size_t request_parser::append_body(boost::beast::string_view body, boost::beast::error_code& ec) {
  if (body_.size() + body.size() > max_body_bytes_) {
    refuse(parse_refusal::payload_too_large, ec);
    return 0;
  }
  body_.append(body.data(), body.size());
  return body.size();
}

std::size_t request_parser::on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) {
  return append_body(body, ec);
}

std::size_t request_parser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                               boost::beast::error_code& ec) {
  return append_body(body, ec);
}

parse_refusal request_parser::refusal_for(boost::beast::error_code ec) const {
  if (refusal_ != parse_refusal::none)
    return refusal_;
  if (ec == http::error::body_limit)
    return parse_refusal::payload_too_large;
  if (ec == http::error::header_limit) // the head outgrew Beast's bound: in its first line or after
    return line_done_ ? parse_refusal::headers_too_large : parse_refusal::uri_too_long;
  return parse_refusal::bad_request;
}

} // namespace gather
