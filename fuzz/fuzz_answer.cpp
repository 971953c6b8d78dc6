// Fuzzes downstream response classification and the `fields` projection.
// Input: byte 0 picks the transfer error and HTTP status, byte 1 picks a set of `fields`, the rest
// is the body. Invariants: the body spliced (validated by simdjson) and projected (by nlohmann) get
// the same status and reason; ok exactly for a 2xx non-null JSON body within max_json_depth; ok data
// is valid JSON (UTF-8 included), never null, an object or an array when projected, at most 2
// elements when an array cut by max_items; anything else carries no data.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/downstream/answer/downstream_answer.hpp"

namespace {

using gather::field_path;

const std::vector<std::vector<field_path>> field_sets = {
    {},
    {{"a"}},
    {{"a", "b"}, {"c"}},
    {{"a"}, {"a", "b"}},
    {{"a", "b", "c"}, {"a", "d"}, {"x"}},
    {{""}, {"a", ""}},
};

const long statuses[] = {200, 201, 204, 299, 301, 302, 404, 429, 500, 503, 100, 0};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return 0;
  gather::transfer_result result;
  const std::uint8_t pick = data[0];
  result.error = (pick & 0xF0) == 0xF0 ? static_cast<gather::transfer_error>(pick % 5)
                                        : gather::transfer_error::none;
  result.http_status = statuses[pick % (sizeof statuses / sizeof statuses[0])];
  const auto& fields = field_sets[data[1] % field_sets.size()];
  const std::size_t max_items = (data[1] & 0x80) != 0 ? 2 : 0;
  result.body.assign(reinterpret_cast<const char*>(data + 2), size - 2);
  const std::string body = result.body;

  gather::transfer_result again = result;
  const gather::answer_verdict verdict = gather::classify_answer(std::move(result), fields, max_items);
  // The other validator (simdjson for a body only spliced, nlohmann for a projected one) gives the
  // same body the same verdict and the same reason.
  const auto& other_fields = fields.empty() ? field_sets[1] : field_sets[0];
  const gather::answer_verdict other = gather::classify_answer(std::move(again), other_fields);
  FUZZ_CHECK(other.status == verdict.status);
  FUZZ_CHECK(other.detail == verdict.detail);
  if (verdict.status != gather::section_status::ok) {
    FUZZ_CHECK(verdict.data.empty());
    return 0;
  }
  FUZZ_CHECK(verdict.http_status >= 200 && verdict.http_status <= 299);
  const auto parsed = nlohmann::json::parse(verdict.data, nullptr, false);
  FUZZ_CHECK(!parsed.is_discarded());
  FUZZ_CHECK(!parsed.is_null());
  if (max_items != 0 && parsed.is_array())
    FUZZ_CHECK(parsed.size() <= max_items);
  if (!fields.empty()) {
    FUZZ_CHECK(parsed.is_object() || parsed.is_array()); // an array's elements each projected
    // Projecting the projection changes nothing.
    FUZZ_CHECK(gather::project_fields(parsed, fields) == parsed);
  }
  // nlohmann's parse above stops at a NUL and skips a byte order mark: neither may be in the data.
  FUZZ_CHECK(verdict.data.find('\0') == std::string::npos);
  FUZZ_CHECK(verdict.data.rfind("\xEF\xBB\xBF", 0) != 0);
  // The data is spliced into the response as text: it must survive a strict dump.
  (void)parsed.dump();
  return 0;
}
