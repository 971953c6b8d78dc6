#include "gather/front/answer_dress.hpp"

#include "gather/front/negotiation.hpp"

namespace gather {

answer_dress::answer_dress(const config& cfg, std::string_view origin, std::string_view accept_encoding) {
  if (cfg.cors && !origin.empty())
    cors_ = cors_answer_headers(*cfg.cors, origin);
  if (cfg.compression) {
    compression_ = *cfg.compression;
    coding_ = choose_coding(accept_encoding, cfg.compression->encodings);
  }
}

void answer_dress::apply(http_reply& reply) const {
  reply.headers.insert(reply.headers.end(), cors_.begin(), cors_.end());
  // Only JSON: /metrics (text) and the dashboard (HTML) stay identity, as monitoring tools expect.
  if (!compression_ || reply.content_type != "application/json" || reply.body.empty() ||
      reply.body.size() < compression_->min_bytes)
    return;
  reply.headers.emplace_back("Vary", "Accept-Encoding");
  if (coding_ == content_coding::identity)
    return;
  reply.body = encode_whole(coding_, *compression_, reply.body);
  reply.headers.emplace_back("Content-Encoding", coding_token(coding_));
}

std::unique_ptr<body_encoder> answer_dress::apply_to_stream(http_reply& head) const {
  head.headers.insert(head.headers.end(), cors_.begin(), cors_.end());
  if (!compression_)
    return nullptr;
  head.headers.emplace_back("Vary", "Accept-Encoding");
  if (coding_ == content_coding::identity)
    return nullptr;
  head.headers.emplace_back("Content-Encoding", coding_token(coding_));
  return body_encoder::make(coding_, *compression_);
}

} // namespace gather
