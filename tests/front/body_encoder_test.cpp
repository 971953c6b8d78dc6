// gzip and br through the reference decoders: whole bodies, and streams flushed piece by piece
// where every piece decodes as soon as its bytes are read.
#include <catch2/catch.hpp>

#include <string>

#include "gather/front/body_encoder.hpp"
#include "support/decode.hpp"

using gather::content_coding;

namespace {

std::string sample_json(int rows) {
  std::string out = "{\"rows\":[";
  for (int i = 0; i < rows; ++i)
    out += (i ? "," : "") + std::string("{\"id\":") + std::to_string(i) + ",\"title\":\"item number " +
           std::to_string(i * 7919 % 1000) + "\",\"price\":" + std::to_string(i * 13 % 97) + "}";
  return out + "]}";
}

} // namespace

TEST_CASE("body encoder: whole bodies round-trip and shrink", "[unit][compression]") {
  const gather::compression_config settings;
  const auto body = sample_json(500);
  for (auto coding : {content_coding::gzip, content_coding::br}) {
    const auto packed = gather::encode_whole(coding, settings, body);
    CHECK(packed.size() < body.size() / 4);
    CHECK(gather::test::decode_whole(coding, packed) == body);
  }
  CHECK(gather::encode_whole(content_coding::identity, settings, body) == body);
  CHECK(gather::test::decode_whole(content_coding::gzip, gather::encode_whole(content_coding::gzip, settings, "")).empty());
}

TEST_CASE("body encoder: each flushed piece decodes before the next is written", "[unit][compression]") {
  gather::compression_config settings;
  for (auto coding : {content_coding::gzip, content_coding::br}) {
    for (int level : {1, 9}) {
      settings.gzip_level = level;
      settings.br_quality = level == 9 ? 11 : 0;
      auto encoder = gather::body_encoder::make(coding, settings);
      REQUIRE(encoder);
      gather::test::stream_decoder decoder(coding);
      std::string all;
      for (int line = 0; line < 20; ++line) {
        const auto piece = sample_json(line % 4 == 0 ? 300 : 2) + "\n";
        const auto bytes = encoder->flush(piece);
        CHECK_FALSE(bytes.empty());
        CHECK(decoder.feed(bytes) == piece);
        all += piece;
      }
      CHECK(decoder.feed(encoder->finish("{\"done\":true}\n")) == "{\"done\":true}\n");
      CHECK(decoder.ended());
    }
  }
  CHECK_FALSE(gather::body_encoder::make(content_coding::identity, settings));
}
