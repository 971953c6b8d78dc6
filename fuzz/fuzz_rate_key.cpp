// Fuzzes the rate limit's key extraction (app/admission/rate_limiter.cpp) and the `per` value's
// reading (app/config/read_auth.cpp), then spends a token under the key.
// Input lines: the `per` value; the peer address; then "name: value" header lines; a line that
// starts with '{' is the token's claims (JSON).
// Invariants: a `per` the config accepts gives the documented key (the first value of the header,
// the claim's text, the peer, or "" for route); a refusal always says at least 1 s.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/admission/jwt.hpp"
#include "gather/admission/rate_limiter.hpp"
#include "gather/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string_view> lines;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  while (!input.empty() && lines.size() < 64) {
    const auto end = input.find('\n');
    lines.push_back(input.substr(0, end));
    input = end == std::string_view::npos ? std::string_view{} : input.substr(end + 1);
  }
  if (lines.size() < 2)
    return 0;
  nlohmann::json per;
  try {
    per = std::string(lines[0]);
    (void)per.dump(); // invalid UTF-8 is not a JSON string
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  const nlohmann::json cfg_json{
      {"routes",
       {{{"path", "/p"},
         {"auth", {{"jwt", {{"jwks_file", "/dev/null"}}}}},
         {"rate_limit", {{"per", per}, {"rate_per_s", 1}, {"burst", 2}, {"max_keys", 16}}},
         {"sections", {{{"name", "s"}, {"url", "http://127.0.0.1:1/x"}, {"timeout_ms", 10}, {"required", true}}}}}}}};
  const auto loaded = gather::load_config(cfg_json.dump());
  if (!loaded.value) {
    FUZZ_CHECK(!loaded.problems.empty());
    return 0;
  }
  const auto& limit = *loaded.value->routes[0].rate_limit;
  std::vector<std::pair<std::string, std::string>> headers;
  nlohmann::json claims;
  bool has_claims = false;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    if (!lines[i].empty() && lines[i][0] == '{') {
      claims = nlohmann::json::parse(lines[i], nullptr, false);
      has_claims = !claims.is_discarded() && claims.is_object();
      continue;
    }
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string name(lines[i].substr(0, colon));
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers.emplace_back(std::move(name), std::string(lines[i].substr(colon + 1)));
  }
  const auto key = gather::rate_limit_key(limit, lines[1], headers, has_claims ? &claims : nullptr);
  using kind = gather::rate_limit_config::key_kind;
  switch (limit.per) {
    case kind::ip: FUZZ_CHECK(key == lines[1]); break;
    case kind::route: FUZZ_CHECK(key.empty()); break;
    case kind::header: {
      std::string first;
      for (const auto& [name, value] : headers)
        if (name == limit.name) {
          first = value;
          break;
        }
      FUZZ_CHECK(key == first);
      break;
    }
    case kind::claim:
      FUZZ_CHECK(key == (has_claims ? gather::claim_text(claims, limit.name) : std::string{}));
      break;
  }
  gather::rate_limiter limiter{limit};
  FUZZ_CHECK(limiter.capacity() <= limit.max_keys);
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    const auto decision = limiter.take(key, now);
    FUZZ_CHECK(decision.allowed == (i < 2));
    if (!decision.allowed)
      FUZZ_CHECK(decision.retry_after.count() >= 1);
  }
  return 0;
}
