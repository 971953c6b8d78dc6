// Decoding what the gateway compressed, with the reference decoders (zlib's inflate, libbrotli's
// decoder), incrementally: a test feeds the bytes as they arrived and reads what they decode to.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <brotli/decode.h>
#include <zlib.h>

#include "gather/config/config.hpp"

namespace gather::test {

class stream_decoder {
public:
  explicit stream_decoder(content_coding coding) : coding_(coding) {
    if (coding_ == content_coding::gzip) {
      if (inflateInit2(&z_, 15 + 16) != Z_OK)
        throw std::runtime_error("inflateInit2");
    } else if (coding_ == content_coding::br) {
      br_ = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
    }
  }
  ~stream_decoder() {
    if (coding_ == content_coding::gzip)
      inflateEnd(&z_);
    if (br_)
      BrotliDecoderDestroyInstance(br_);
  }
  stream_decoder(const stream_decoder&) = delete;
  stream_decoder& operator=(const stream_decoder&) = delete;

  /// What `bytes` decode to, given everything fed before. Throws on corrupt input.
  std::string feed(std::string_view bytes) {
    if (coding_ == content_coding::identity)
      return std::string(bytes);
    std::string out;
    char buffer[16384];
    if (coding_ == content_coding::gzip) {
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
      z_.avail_in = static_cast<uInt>(bytes.size());
      do {
        z_.next_out = reinterpret_cast<Bytef*>(buffer);
        z_.avail_out = sizeof buffer;
        const int rc = inflate(&z_, Z_SYNC_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
          throw std::runtime_error("inflate failed");
        out.append(buffer, sizeof buffer - z_.avail_out);
        if (rc == Z_STREAM_END)
          ended_ = true;
        if (rc == Z_BUF_ERROR || rc == Z_STREAM_END)
          break;
      } while (z_.avail_in > 0 || z_.avail_out == 0);
      return out;
    }
    auto* next_in = reinterpret_cast<const std::uint8_t*>(bytes.data());
    std::size_t avail_in = bytes.size();
    for (;;) {
      auto* next_out = reinterpret_cast<std::uint8_t*>(buffer);
      std::size_t avail_out = sizeof buffer;
      const auto rc = BrotliDecoderDecompressStream(br_, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      out.append(buffer, sizeof buffer - avail_out);
      if (rc == BROTLI_DECODER_RESULT_ERROR)
        throw std::runtime_error("brotli decoding failed");
      if (rc == BROTLI_DECODER_RESULT_SUCCESS) {
        ended_ = true;
        return out;
      }
      if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
        return out;
    }
  }

  /// The stream's end marker has been read (gzip trailer, brotli's last block).
  bool ended() const { return ended_; }

private:
  content_coding coding_;
  z_stream z_{};
  BrotliDecoderState* br_ = nullptr;
  bool ended_ = false;
};

inline std::string decode_whole(content_coding coding, std::string_view bytes) {
  if (coding == content_coding::identity)
    return std::string(bytes);
  stream_decoder decoder(coding);
  auto out = decoder.feed(bytes);
  if (!decoder.ended())
    throw std::runtime_error("the compressed stream did not end");
  return out;
}

} // namespace gather::test
