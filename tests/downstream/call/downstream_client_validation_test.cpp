// A downstream body's verdict and reason, the same whether it is spliced or projected.
//
// The downstream client against real servers on loopback, and what it read classified by both of
// the body's validators. Time limits are generous on purpose (a loaded 2-core machine): they
// separate "bounded by the timeout" from "waited for the server".
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "gather/downstream/answer/downstream_answer.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "support/test_server.hpp"
#include "downstream/call/downstream_client_test_support.hpp"

using namespace std::chrono_literals;
using gather::downstream_client;
using gather::transfer_error;
using gather::transfer_result;
using gather::test::test_server;
using steady = std::chrono::steady_clock;
using namespace gather::test::downstream_client_support;

namespace {

struct body_case {
  std::string body;
  std::string reason; ///< the verdict's detail: empty for ok
};

std::string nested_text(int depth, const std::string& open, const std::string& inner, const std::string& close) {
  std::string text;
  for (int i = 0; i < depth; ++i)
    text += open;
  text += inner;
  for (int i = 0; i < depth; ++i)
    text += close;
  return text;
}

/// Good and bad downstream bodies, each with the reason it is refused for (empty: ok).
std::vector<body_case> validation_table() {
  using namespace std::string_literals;
  const std::string bom = "\xEF\xBB\xBF";
  return {
      // Good: any JSON value but null, whatever simdjson or nlohmann makes of its numbers.
      {"{}", ""},
      {"[]", ""},
      {"1", ""},
      {"\"x\"", ""},
      {"true", ""},
      {"-0", ""},
      {"1E+5", ""},
      {"1e-400", ""},                         // underflows to 0: a number
      {"1.7976931348623157e308", ""},         // the largest double
      {"123456789012345678901234567890", ""}, // beyond 64 bits: simdjson refuses, nlohmann reads a double
      {"-9223372036854775809", ""},
      {"{\"a\" : [1, 2, {\"b\": null}], \"c\": \"\\u0000\\/\\n\"}", ""},
      {" \t\r\n{}\n", ""},
      {bom + "{\"bom\":1}", ""},
      {"\"\\ud83d\\ude00 caf\xC3\xA9 \xF0\x9F\x98\x80 \x7F\"", ""},
      {"\"\xEF\xBF\xBF\"", ""}, // U+FFFF: a noncharacter, still UTF-8
      {nested_text(512, "[", "", "]"), ""},
      {nested_text(512, "{\"a\":", "1", "}"), ""}, // simdjson refuses objects this deep; nlohmann does not
      // null at the top
      {"null", "json_null"},
      {" null\n", "json_null"},
      {bom + "null", "json_null"},
      // Too deep, before or after the text goes wrong
      {nested_text(513, "[", "", "]"), "json_too_deep"},
      {nested_text(513, "{\"a\":", "1", "}"), "json_too_deep"},
      {nested_text(513, "[", "", "") + "x", "json_too_deep"},
      {"x" + nested_text(513, "[", "", "]"), "invalid_json"},
      // Not JSON
      {"", "invalid_json"},
      {" ", "invalid_json"},
      {bom, "invalid_json"},
      {"\xEF\xBB{}", "invalid_json"},
      {bom + bom + "{}", "invalid_json"}, // nlohmann skips a second mark: not JSON all the same
      {"{}\0garbage"s, "invalid_json"},   // nlohmann's lexer ends a text at a NUL
      {"[1]\0"s, "invalid_json"},
      {"null\0"s, "invalid_json"},
      {"\0"s, "invalid_json"},
      {"{", "invalid_json"},
      {"}", "invalid_json"},
      {"[1]]", "invalid_json"},
      {"[1,]", "invalid_json"},
      {"{\"a\":1,}", "invalid_json"},
      {"{\"a\" 1}", "invalid_json"},
      {"{1:2}", "invalid_json"},
      {"[1 2]", "invalid_json"},
      {"{\"a\":1} x", "invalid_json"},
      {"{} {}", "invalid_json"},
      {"\"a\"\"b\"", "invalid_json"},
      {"'x'", "invalid_json"},
      {"01", "invalid_json"},
      {"1.", "invalid_json"},
      {".5", "invalid_json"},
      {"-", "invalid_json"},
      {"1e400", "invalid_json"}, // beyond a double
      {"-1e400", "invalid_json"},
      {"NaN", "invalid_json"},
      {"Infinity", "invalid_json"},
      {"tru", "invalid_json"},
      {"nul", "invalid_json"},
      {"/*c*/1", "invalid_json"},
      {"[1]//c", "invalid_json"},
      {"\x0C{}", "invalid_json"}, // form feed: not JSON whitespace
      {"{}\x0B", "invalid_json"},
      // Strings: escapes, control characters, UTF-8
      {"\"\\x\"", "invalid_json"},
      {"\"\\u12\"", "invalid_json"},
      {"\"\\ud800\"", "invalid_json"},        // a lone high surrogate
      {"\"\\udc00\"", "invalid_json"},        // a lone low surrogate
      {"\"\\ud800\\u0041\"", "invalid_json"}, // a high surrogate and no low one
      {"\"\x01\"", "invalid_json"},
      {"\"\t\"", "invalid_json"},
      {"\"\xFF\"", "invalid_json"},
      {"\"\xC0\x80\"", "invalid_json"},         // overlong
      {"\"\xED\xA0\x80\"", "invalid_json"},     // a surrogate encoded as UTF-8
      {"\"\xF4\x90\x80\x80\"", "invalid_json"}, // beyond U+10FFFF
      {"\"\xE2\x82\"", "invalid_json"},         // truncated
      {"{\"\xFF\": 1}", "invalid_json"},        // in a key
  };
}

} // namespace

// A downstream body is validated one of two ways (app/downstream/answer/downstream_answer.cpp): simdjson
// where the body is only validated and spliced, nlohmann where `fields` projects it. Both must give
// every body the same verdict and reason: the table's bodies, served by a real downstream and read
// by the client, once with a Content-Length and once chunked, each classified both ways.
TEST_CASE("a downstream body gets the same verdict and reason whether it is spliced or projected", "[client]") {
  const auto table = validation_table();
  test_server down;
  down.get(R"(/length/(\d+))", [&table](const httplib::Request& req, httplib::Response& res) {
    res.set_content(table.at(std::stoul(req.matches[1])).body, "application/json");
  });
  down.get(R"(/chunked/(\d+))", [&table](const httplib::Request& req, httplib::Response& res) {
    const std::string body = table.at(std::stoul(req.matches[1])).body;
    res.set_chunked_content_provider("application/json", [body](std::size_t, httplib::DataSink& sink) {
      if (!body.empty())
        sink.write(body.data(), body.size());
      sink.done();
      return true;
    });
  });
  down.start();
  downstream_client client;
  const std::vector<gather::field_path> projection = {{"a"}};

  for (const std::string framing : {"length", "chunked"}) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      const auto& expected = table[i];
      INFO(framing << " body " << i << ": " << expected.body.substr(0, 60));
      auto result = fetch_request(client, request_for(down.base_url() + "/" + framing + "/" + std::to_string(i)));
      REQUIRE(result.error == transfer_error::none);
      REQUIRE(result.http_status == 200);
      REQUIRE(result.body == expected.body);
      transfer_result copy = result;
      const char* read_at = result.body.data();

      const auto spliced = gather::classify_answer(std::move(result), {});
      const auto projected = gather::classify_answer(std::move(copy), projection);
      CHECK(spliced.detail == expected.reason);
      CHECK(projected.detail == expected.reason);
      const auto want = expected.reason.empty() ? gather::section_status::ok : gather::section_status::error;
      CHECK(spliced.status == want);
      CHECK(projected.status == want);
      if (want != gather::section_status::ok)
        continue;
      const bool bom = expected.body.rfind("\xEF\xBB\xBF", 0) == 0;
      CHECK(spliced.data == expected.body.substr(bom ? 3 : 0));
      // The client leaves simdjson's room after the body (announced or chunked): validated and
      // spliced where it was read, never copied.
      if (!bom)
        CHECK(static_cast<const void*>(spliced.data.data()) == static_cast<const void*>(read_at));
    }
  }
}
