#include "gather/front/body_encoder.hpp"

#include <stdexcept>

#include <brotli/encode.h>
#include <zlib.h>

namespace gather {

namespace {

constexpr std::size_t out_step = 16384;

/// gzip (RFC 1952) through zlib's deflate: window bits 15 + 16 ask for the gzip wrapper.
class gzip_encoder final : public body_encoder {
public:
  explicit gzip_encoder(int level) {
    if (deflateInit2(&z_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("zlib: deflateInit2 failed");
  }
  ~gzip_encoder() override { deflateEnd(&z_); }
  gzip_encoder(const gzip_encoder&) = delete;
  gzip_encoder& operator=(const gzip_encoder&) = delete;

  std::string flush(std::string_view piece) override { return run(piece, Z_SYNC_FLUSH); }
  std::string finish(std::string_view last) override { return run(last, Z_FINISH); }

private:
  std::string run(std::string_view in, int mode) {
    std::string out;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      const auto used = out.size();
      out.resize(used + out_step);
      z_.next_out = reinterpret_cast<Bytef*>(out.data() + used);
      z_.avail_out = static_cast<uInt>(out_step);
      const int rc = deflate(&z_, mode);
      out.resize(used + out_step - z_.avail_out);
      if (rc == Z_STREAM_ERROR)
        throw std::runtime_error("zlib: deflate failed");
      // Done when the flush fitted (output room left over) or the stream has ended.
      if (mode == Z_FINISH ? rc == Z_STREAM_END : (z_.avail_out != 0 && z_.avail_in == 0))
        return out;
    }
  }

  z_stream z_{};
};

/// br (RFC 7932) through libbrotli's streaming encoder.
class brotli_encoder final : public body_encoder {
public:
  explicit brotli_encoder(int quality) : state_(BrotliEncoderCreateInstance(nullptr, nullptr, nullptr)) {
    if (!state_)
      throw std::runtime_error("brotli: cannot create an encoder");
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_QUALITY, static_cast<std::uint32_t>(quality));
    // A 256 KiB window: answers are JSON of a few KB to a few MB, and each open stream holds one.
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_LGWIN, 18);
    BrotliEncoderSetParameter(state_, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT);
  }
  ~brotli_encoder() override { BrotliEncoderDestroyInstance(state_); }
  brotli_encoder(const brotli_encoder&) = delete;
  brotli_encoder& operator=(const brotli_encoder&) = delete;

  std::string flush(std::string_view piece) override { return run(piece, BROTLI_OPERATION_FLUSH); }
  std::string finish(std::string_view last) override { return run(last, BROTLI_OPERATION_FINISH); }

private:
  std::string run(std::string_view in, BrotliEncoderOperation op) {
    std::string out;
    auto* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    std::size_t avail_in = in.size();
    for (;;) {
      const auto used = out.size();
      out.resize(used + out_step);
      auto* next_out = reinterpret_cast<std::uint8_t*>(out.data() + used);
      std::size_t avail_out = out_step;
      if (!BrotliEncoderCompressStream(state_, op, &avail_in, &next_in, &avail_out, &next_out, nullptr))
        throw std::runtime_error("brotli: compressing failed");
      out.resize(used + out_step - avail_out);
      const bool drained = avail_in == 0 && !BrotliEncoderHasMoreOutput(state_);
      if (op == BROTLI_OPERATION_FINISH ? BrotliEncoderIsFinished(state_) : drained)
        return out;
    }
  }

  BrotliEncoderState* state_;
};

} // namespace

std::unique_ptr<body_encoder> body_encoder::make(content_coding coding, const compression_config& settings) {
  switch (coding) {
    case content_coding::gzip: return std::make_unique<gzip_encoder>(settings.gzip_level);
    case content_coding::br: return std::make_unique<brotli_encoder>(settings.br_quality);
    case content_coding::identity: break;
  }
  return nullptr;
}

std::string encode_whole(content_coding coding, const compression_config& settings, std::string_view body) {
  auto encoder = body_encoder::make(coding, settings);
  return encoder ? encoder->finish(body) : std::string(body);
}

} // namespace gather
