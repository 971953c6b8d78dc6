// What the front adds to every answer of one request, whatever protocol carries it: the CORS
// headers its Origin earns (docs/api.md#cors) and the content coding its Accept-Encoding allows
// (docs/api.md#compression). Decided once per request, applied to a whole answer or to the head of
// a progressive one.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "gather/config/config.hpp"
#include "gather/front/body_encoder.hpp"
#include "gather/admission/cors_policy.hpp"
#include "gather/values/http_reply.hpp"

namespace gather {

class answer_dress {
public:
  answer_dress() = default;
  /// For a request with these `Origin` and `Accept-Encoding` values ("" when absent).
  answer_dress(const config& cfg, std::string_view origin, std::string_view accept_encoding);

  /// A whole answer: the CORS headers; the body compressed (Content-Encoding, Vary) when it is JSON
  /// of at least `min_bytes` and the client accepts a configured coding.
  void apply(http_reply& reply) const;
  /// A progressive answer's head: the CORS headers, and Content-Encoding and Vary when the client
  /// accepts a coding. Returns the encoder every piece goes through (null: identity).
  std::unique_ptr<body_encoder> apply_to_stream(http_reply& head) const;

private:
  header_list cors_;
  std::optional<compression_config> compression_; ///< absent: no compression configured
  content_coding coding_ = content_coding::identity;
};

} // namespace gather
