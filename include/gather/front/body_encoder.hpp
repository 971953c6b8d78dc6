// Compressing an answer's body with Debian's zlib (gzip) and libbrotli (br). A stream is flushed
// after every piece, so a client decodes each line of a progressive answer as it arrives.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "gather/config/config.hpp"

namespace gather {

class body_encoder {
public:
  /// An encoder for `coding` (gzip or br) at the configured level; null for identity.
  static std::unique_ptr<body_encoder> make(content_coding coding, const compression_config& settings);

  virtual ~body_encoder() = default;
  /// Compresses `piece` and flushes: the bytes returned, after all returned before, decode to
  /// everything given so far (zlib's Z_SYNC_FLUSH, brotli's BROTLI_OPERATION_FLUSH).
  virtual std::string flush(std::string_view piece) = 0;
  /// Compresses `last` and ends the stream (the gzip trailer, brotli's last meta-block).
  virtual std::string finish(std::string_view last) = 0;
};

/// A whole body compressed at once.
std::string encode_whole(content_coding coding, const compression_config& settings, std::string_view body);

} // namespace gather
