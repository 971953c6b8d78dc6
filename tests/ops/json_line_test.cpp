// The request log's JSON writer against nlohmann's serializer: the same text for every string,
// valid UTF-8 or not (nlohmann with error_handler_t::replace is the reference), and lines that
// parse back to what was written.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "gather/ops/json_line.hpp"
#include "gather/values/section_outcome.hpp"

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

namespace {

std::string line_of_seconds(std::int64_t unix_micros) {
  gather::json_line line;
  line.unix_time("ts", unix_micros);
  return std::move(line).done();
}

std::string line_of_double(std::int64_t unix_micros) {
  gather::json_line line;
  line.field("ts", static_cast<double>(unix_micros) / 1e6);
  return std::move(line).done();
}

} // namespace

TEST_CASE("json_line: unix_time prints what the double of its seconds prints", "[unit][log]") {
  for (const std::int64_t micros :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{-1500000}, std::int64_t{999999},
        std::int64_t{1000000}, std::int64_t{1000001}, std::int64_t{1764640000000000},
        std::int64_t{1764640000100000}, std::int64_t{1764640000000001}, std::int64_t{1764640000999999},
        std::int64_t{1800000000000000}, std::int64_t{1800000000000010}, std::int64_t{4294967295999999},
        std::int64_t{4294967296000000}, std::int64_t{4294967296000001}, std::int64_t{9007199254740991}})
    CHECK(line_of_seconds(micros) == line_of_double(micros));
  std::mt19937_64 random{20261202};
  // This century's clock, then anything from 0 to 2^33 s (the fast path ends at 2^32).
  std::uniform_int_distribution<std::int64_t> now(1700000000000000, 1900000000000000),
    any(0, (std::int64_t{1} << 33) * 1000000);
  for (int n = 0; n < 300000; ++n) {
    const auto micros = n % 2 == 0 ? now(random) : any(random);
    const auto got = line_of_seconds(micros);
    const auto want = line_of_double(micros);
    if (got != want) {
      INFO("unix_micros " << micros);
      CHECK(got == want);
      break;
    }
  }
}

TEST_CASE("json_line: literal keys are plain, and a key that is not is escaped", "[unit][log]") {
  static_assert(gather::json_key{"request_id"}.plain());
  static_assert(!gather::json_key{"a \"b\""}.plain());
  static_assert(!gather::json_key{"caf\xC3\xA9"}.plain());
  gather::json_line line;
  line.field("plain", 1).field("quo\"te", 2).field(gather::json_key{std::string_view{"back\\slash"}}, 3);
  CHECK(std::move(line).done() == R"({"plain":1,"quo\"te":2,"back\\slash":3})");
}

TEST_CASE("json_line: a line longer than expected grows and writes what nlohmann writes", "[unit][log]") {
  std::mt19937 random{7};
  std::uniform_int_distribution<int> length(0, 40), byte(0, 255), fields(0, 30), kind(0, 2);
  for (int n = 0; n < 2000; ++n) {
    gather::json_line line{16}; // every line outgrows this, most more than once
    nlohmann::ordered_json want = nlohmann::ordered_json::object();
    for (int f = fields(random); f > 0; --f) {
      const std::string key = "k" + std::to_string(f);
      std::string text;
      for (int k = length(random); k > 0; --k)
        text.push_back(static_cast<char>(byte(random)));
      switch (kind(random)) {
      case 0: line.field(gather::json_key{key}, text); want[key] = text; break;
      case 1: line.field(gather::json_key{key}, std::int64_t{f} * -123456789); want[key] = std::int64_t{f} * -123456789; break;
      default: line.open(gather::json_key{key}).field("t", text).close(); want[key] = {{"t", text}};
      }
    }
    const auto got = std::move(line).done();
    const auto expected = want.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    if (got != expected) {
      CHECK(got == expected);
      break;
    }
  }
}

TEST_CASE("json_line: the enum names the log writes unscanned are plain and written as field writes them",
          "[unit][log]") {
  using namespace gather;
  std::vector<const char*> names;
  for (auto s : {section_status::ok, section_status::timeout, section_status::error, section_status::rejected,
                 section_status::skipped})
    names.push_back(to_string(s));
  for (auto s : {data_source::live, data_source::cache, data_source::fallback, data_source::stale})
    names.push_back(to_string(s));
  for (auto s : {not_made_reason::none, not_made_reason::max_concurrent, not_made_reason::circuit_open,
                 not_made_reason::retry_budget, not_made_reason::bad_body})
    names.push_back(to_string(s));
  for (const char* name : names) {
    INFO(name);
    CHECK(json_key::needs_no_escaping(name));
    json_line scanned{16}, plain{16}; // small: the plain path grows the line like the scanned one
    scanned.field("a", 1).field("status", name);
    plain.field("a", 1).plain_field("status", name);
    CHECK(std::move(plain).done() == std::move(scanned).done());
  }
}
