// Fuzzes batch body parsing (app/admission/batch_body.cpp).
// Invariants: a refused body has a reason and no items; an accepted one has at most max_items
// items, each `json` is valid JSON (a string or a number) and `text` is what {item} substitutes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/admission/batch_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  const std::size_t max_items = data[0] % 8 == 0 ? 1000 : data[0] % 8;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const gather::batch_body parsed = gather::parse_batch_body(body, max_items);
  if (!parsed.problem.empty()) {
    FUZZ_CHECK(parsed.items.empty());
    return 0;
  }
  FUZZ_CHECK(parsed.items.size() <= max_items);
  for (const gather::batch_item& item : parsed.items) {
    const auto json = nlohmann::json::parse(item.json, nullptr, false);
    FUZZ_CHECK(!json.is_discarded());
    FUZZ_CHECK(json.is_string() || json.is_number());
    if (json.is_string())
      FUZZ_CHECK(json.get<std::string>() == item.text);
    else
      FUZZ_CHECK(item.text == item.json);
    // The row is spliced into a response: it must dump again without throwing (valid UTF-8).
    (void)json.dump();
  }
  return 0;
}
