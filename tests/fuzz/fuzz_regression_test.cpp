// Replays the fuzz corpora (fuzz/corpus/<target>/: the seeds and every input that once failed)
// through the fuzz targets' own checks, compiled into this suite (tests/CMakeLists.txt), and pins
// what the fuzzers found as plain unit tests.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gather/config/config.hpp"
#include "gather/config/url_template.hpp"

extern "C" int gather_fuzz_config(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_answer(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_batch_body(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_jwt(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_rate_key(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_request(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_h2(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_h2_client(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_response(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_url_split(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_grpc(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_proxy(const std::uint8_t* data, std::size_t size);
extern "C" int gather_fuzz_write_body(const std::uint8_t* data, std::size_t size);
#ifdef GATHER_REPLAY_URL_CORPUS
extern "C" int gather_fuzz_url(const std::uint8_t* data, std::size_t size);
#endif

namespace {

using target_fn = int (*)(const std::uint8_t*, std::size_t);

/// Runs every file of fuzz/corpus/<name> through `target` (a failed check aborts the run, naming
/// the check); returns how many it ran.
int replay(const std::string& name, target_fn target) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GATHER_FUZZ_CORPUS) + "/" + name)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    INFO(entry.path().string());
    target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    ++files;
  }
  return files;
}

std::string render(const std::string& url, const std::string& value) {
  const std::string text = R"({"routes": [{"path": "/p", "sections": [{"name": "s", "url": ")" + url +
                           R"(", "timeout_ms": 100, "required": true}]}]})";
  auto loaded = gather::load_config(text);
  REQUIRE(loaded.value);
  auto rendered = gather::render_url(loaded.value->routes[0].sections[0].url,
                                     [&](const gather::url_part&) { return value; });
  REQUIRE(rendered);
  return *rendered;
}

} // namespace

TEST_CASE("fuzz corpora replay through the fuzz targets' checks", "[unit][fuzz]") {
  CHECK(replay("config", gather_fuzz_config) > 0);
  CHECK(replay("answer", gather_fuzz_answer) > 0);
  CHECK(replay("batch_body", gather_fuzz_batch_body) > 0);
  CHECK(replay("jwt", gather_fuzz_jwt) > 0);
  CHECK(replay("rate_key", gather_fuzz_rate_key) > 0);
  CHECK(replay("request", gather_fuzz_request) > 0);
  CHECK(replay("h2", gather_fuzz_h2) > 0);
  CHECK(replay("h2_client", gather_fuzz_h2_client) > 0);
  CHECK(replay("response", gather_fuzz_response) > 0);
  CHECK(replay("url_split", gather_fuzz_url_split) > 0);
  CHECK(replay("grpc", gather_fuzz_grpc) > 0);
  CHECK(replay("proxy", gather_fuzz_proxy) > 0);
  CHECK(replay("write_body", gather_fuzz_write_body) > 0);
#ifdef GATHER_REPLAY_URL_CORPUS
  CHECK(replay("url", gather_fuzz_url) > 0);
#endif
}

TEST_CASE("fuzz finding: an empty value beside literal dots makes no dot segment", "[unit][fuzz][url]") {
  // fuzz_url found "/.{query.e}" rendering "/." with e empty: a segment clients and servers remove.
  CHECK(render("http://h/a/.{query.e}/b", "") == "http://h/a/%2E/b");
  CHECK(render("http://h/a/{query.e}../b", "") == "http://h/a/%2E%2E/b");
  CHECK(render("http://h/a/{query.e}{query.e}.", "") == "http://h/a/%2E");
  CHECK(render("http://h/a/{query.e}.?x=.", "") == "http://h/a/%2E?x=.");
  // Literal dot segments the template writes itself, and dots beside real values, stay as written.
  CHECK(render("http://h/a/../{query.e}", "x") == "http://h/a/../x");
  CHECK(render("http://h/a/.{query.e}", "x") == "http://h/a/.x");
  CHECK(render("http://h/a/{query.e}.json", "") == "http://h/a/.json");
  // Values that are dots themselves were always encoded.
  CHECK(render("http://h/a/{query.e}/b", "..") == "http://h/a/%2E%2E/b");
  // Query values are not path segments.
  CHECK(render("http://h/a?x={query.e}.", "") == "http://h/a?x=.");
}

TEST_CASE("fuzz finding: a number beyond a double is a config problem, not an abort", "[unit][fuzz][config]") {
  // fuzz_config found that nlohmann reports 1e400 as out_of_range.406, which escaped load_config
  // (it only caught parse_error) and terminated `gather check` / `gather serve`.
  for (const char* text : {R"({"max_inflight": 1e400})", R"({"routes": [], "x": -22222e2222222})",
                           R"([99999999999999991111111111e34559])"}) {
    INFO(text);
    const auto loaded = gather::load_config(text);
    CHECK_FALSE(loaded.value);
    REQUIRE(loaded.problems.size() == 1);
    CHECK(loaded.problems[0].rfind("$: invalid JSON", 0) == 0);
    CHECK(loaded.problems[0].find("number overflow") != std::string::npos);
  }
}
