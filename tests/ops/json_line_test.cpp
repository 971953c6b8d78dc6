// The request log's JSON writer against nlohmann's serializer: the same text for every string,
// valid UTF-8 or not (nlohmann with error_handler_t::replace is the reference), and lines that
// parse back to what was written.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "gather/ops/json_line.hpp"

namespace {

std::string reference(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ours(const std::string& text) {
  std::string out;
  gather::append_json_string(out, text);
  return out;
}

} // namespace

TEST_CASE("json_line: strings are escaped exactly as nlohmann escapes them", "[unit][log]") {
  for (const std::string& text :
       {std::string{}, std::string{"plain"}, std::string{"quote \" backslash \\ slash /"},
        std::string{"\b\f\n\r\t\x01\x1f\x7f"}, std::string{"\0nul", 4}, std::string{"héllo 価格 🛒"},
        std::string{"\xC3"}, std::string{"\xC0\xAF"}, std::string{"\xED\xA0\x80"},
        std::string{"\xF4\x90\x80\x80"}, std::string{"\xE2\x82"}, std::string{"a\xE2\x82z"},
        std::string{"\xF0\x9F\x9B"}, std::string{"\x80\xBF"}, std::string{"\xFF\xFE"},
        std::string{"\xE0\x80\x80"}, std::string{"\xEF\xBF\xBD"}})
    CHECK(ours(text) == reference(text));
}

TEST_CASE("json_line: 200,000 random byte strings escape as nlohmann escapes them", "[unit][log]") {
  std::mt19937 random{20261202};
  // Bytes drawn mostly from the interesting ranges: ASCII, controls, continuation and lead bytes.
  std::uniform_int_distribution<int> length(0, 12), byte(0, 255), pick(0, 3);
  for (int n = 0; n < 200000; ++n) {
    std::string text;
    for (int k = length(random); k > 0; --k) {
      const int kind = pick(random);
      const int b = kind == 0 ? byte(random) % 0x80 : kind == 1 ? 0x80 + byte(random) % 0x40 : byte(random);
      text.push_back(static_cast<char>(b));
    }
    const auto got = ours(text);
    const auto want = reference(text);
    if (got != want) {
      INFO("input bytes: " << nlohmann::json(std::vector<int>(text.begin(), text.end())).dump());
      CHECK(got == want);
      break;
    }
  }
}

TEST_CASE("json_line: a line with nested objects and numbers parses back to its fields", "[unit][log]") {
  gather::json_line line;
  line.field("ts", 1764640000.123456).field("request_id", "r-1").field("status", 200).field(
    "ms", std::int64_t{-3});
  line.open("sections").open("a \"b\"").field("attempts", 2).field("detail", "x\ny").close().open("c").close();
  line.close().field("size", std::size_t{18446744073709551615ULL});
  const auto parsed = nlohmann::json::parse(std::move(line).done());
  CHECK(parsed["ts"].get<double>() == 1764640000.123456);
  CHECK(parsed["request_id"] == "r-1");
  CHECK(parsed["status"] == 200);
  CHECK(parsed["ms"] == -3);
  CHECK(parsed["sections"]["a \"b\""]["attempts"] == 2);
  CHECK(parsed["sections"]["a \"b\""]["detail"] == "x\ny");
  CHECK(parsed["sections"]["c"].empty());
  CHECK(parsed["size"].get<std::uint64_t>() == 18446744073709551615ULL);
}
