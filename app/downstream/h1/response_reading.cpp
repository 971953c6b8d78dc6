#include "gather/downstream/h1/response_reading.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>

namespace gather {

namespace http = boost::beast::http;

void limit_response(http::basic_parser<false>& parser, std::size_t max_body_bytes, std::uint32_t max_head_bytes) {
  parser.header_limit(max_head_bytes);
  parser.body_limit(max_body_bytes);
}

read_failure classify_read_failure(const http::basic_parser<false>& parser, const boost::system::error_code& ec) {
  namespace asio = boost::asio;
  if (ec == http::error::body_limit)
    return read_failure::too_large;
  // (stream_truncated: a TLS server that closed an idle connection without close_notify.)
  if (!parser.got_some() && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                             ec == asio::ssl::error::stream_truncated ||
                             ec == asio::error::connection_reset || ec == asio::error::broken_pipe))
    return read_failure::lost_before_answer;
  // Beast's own errors other than a connection that ended early are a malformed answer.
  if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message)
    return read_failure::malformed;
  return read_failure::ended;
}

} // namespace gather
