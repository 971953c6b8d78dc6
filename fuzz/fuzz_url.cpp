// Fuzzes route matching and URL template rendering with hostile values.
// The fuzzer drives: one URL template (put into a config and validated by load_config, or one of
// a fixed set), an inbound raw path (match_route) and the value of every placeholder.
// Invariants:
//  - render_url's result is the template's literals with each value percent_encode()d in place;
//  - an encoded value holds only unreserved characters and %XX, never '/', '?', '#', '&', '=',
//    is never "." or "..", and decodes back to the value;
//  - curl parses the rendered URL to the same scheme, host and port as the template itself;
//  - no path segment that holds a substituted value is a dot segment ("." or "..");
//  - a route match has one capture per capture segment, none empty.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <curl/curl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "gather/config/config.hpp"
#include "gather/config/route_table.hpp"
#include "gather/config/url_template.hpp"

namespace {

using gather::url_part;

const char* const fixed_config = R"({
  "routes": [
    {"path": "/products/{id}", "sections": [
      {"name": "a", "url": "http://127.0.0.1:9001/items/{id}", "timeout_ms": 100, "required": true},
      {"name": "b", "url": "http://example.com:8080/a/{id}/b?x={query.q}&y={header.x-tenant}#f",
       "timeout_ms": 100, "fallback": {}},
      {"name": "c", "url": "https://h.example/p/{a.b.c}?z={id}", "timeout_ms": 100, "fallback": {}},
      {"name": "d", "url": "http://[::1]:9/{id}.json/{id}{query.q}", "timeout_ms": 100, "fallback": 1},
      {"name": "e", "url": "http://u@h:1/.{query.e}/{query.e}./x", "timeout_ms": 100, "fallback": 1}
    ]},
    {"path": "/a/{x}/b/{y}", "sections": [
      {"name": "a", "url": "http://h/{x}/{y}", "timeout_ms": 100, "required": true}]},
    {"path": "/static/path", "sections": [
      {"name": "a", "url": "http://h/", "timeout_ms": 100, "required": true}]},
    {"path": "/orders/status", "batch": {"url": "http://h:80/o/{item}?i={item}", "timeout_ms": 100}}
  ]
})";

const gather::config& fixed() {
  static const gather::config cfg = [] {
    auto loaded = gather::load_config(fixed_config);
    FUZZ_CHECK(loaded.value.has_value());
    return *loaded.value;
  }();
  return cfg;
}

struct url_parts {
  bool parsed = false;
  std::string scheme, host, port;
};

std::string url_get(CURLU* handle, CURLUPart what) {
  char* text = nullptr;
  if (curl_url_get(handle, what, &text, CURLU_DEFAULT_PORT) != CURLUE_OK || !text)
    return {};
  std::string out(text);
  curl_free(text);
  return out;
}

url_parts curl_parts(const std::string& url) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> handle(curl_url(), &curl_url_cleanup);
  url_parts out;
  if (curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return out;
  out.parsed = true;
  out.scheme = url_get(handle.get(), CURLUPART_SCHEME);
  out.host = url_get(handle.get(), CURLUPART_HOST);
  out.port = url_get(handle.get(), CURLUPART_PORT);
  return out;
}

bool is_unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

void check_encoded(const std::string& value, const std::string& encoded) {
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%') {
      FUZZ_CHECK(i + 2 < encoded.size() && is_hex(encoded[i + 1]) && is_hex(encoded[i + 2]));
      i += 2;
    } else {
      FUZZ_CHECK(is_unreserved(encoded[i]));
    }
  }
  FUZZ_CHECK(encoded != "." && encoded != "..");
  FUZZ_CHECK(gather::percent_decode(encoded) == value);
}

/// Renders `tpl` with values from the fuzzer and checks every invariant above.
void check_render(const gather::url_template& tpl, FuzzedDataProvider& fdp) {
  std::vector<std::string> values;
  const auto resolve = [&](const url_part&) -> std::optional<std::string> {
    if (fdp.remaining_bytes() > 0 && fdp.ConsumeIntegralInRange<int>(0, 15) == 0)
      return std::nullopt;
    values.push_back(fdp.ConsumeRandomLengthString(64));
    return values.back();
  };
  const std::optional<std::string> rendered = gather::render_url(tpl, resolve);
  if (!rendered)
    return;

  // Our own rendering, remembering where each value went.
  std::string expected, benign, literals;
  std::vector<std::size_t> insert_at;
  std::size_t next = 0;
  for (const url_part& part : tpl.parts) {
    if (part.what == url_part::kind::literal) {
      expected += part.text;
      benign += part.text;
      literals += part.text;
      continue;
    }
    FUZZ_CHECK(next < values.size());
    const std::string encoded = gather::percent_encode(values[next]);
    check_encoded(values[next], encoded);
    insert_at.push_back(expected.size());
    expected += encoded;
    insert_at.push_back(expected.size());
    benign += "v";
    ++next;
  }
  FUZZ_CHECK(next == values.size());

  // A path segment that holds a value and is only dots (values are never dots themselves, but an
  // empty one beside literal dots is) must come out with its dots encoded.
  std::string fixed_up = expected;
  const std::size_t scheme_end = expected.find("://");
  const std::size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : expected.find_first_of("/?#", scheme_end + 3);
  if (path_start != std::string::npos && expected[path_start] == '/') {
    const std::size_t path_end = std::min(expected.find_first_of("?#", path_start), expected.size());
    fixed_up = expected.substr(0, path_start);
    std::size_t start = path_start + 1;
    while (start <= path_end) {
      std::size_t end = expected.find('/', start);
      if (end == std::string::npos || end > path_end)
        end = path_end;
      const std::string segment = expected.substr(start, end - start);
      bool holds_value = false;
      for (const std::size_t at : insert_at)
        holds_value = holds_value || (at >= start && at <= end);
      fixed_up += '/';
      if (holds_value && !segment.empty() &&
          segment.find_first_not_of('.') == std::string::npos) {
        for (std::size_t i = 0; i < segment.size(); ++i)
          fixed_up += "%2E";
      } else
        fixed_up += segment;
      start = end + 1;
    }
    fixed_up += expected.substr(path_end);
  }
  FUZZ_CHECK(*rendered == fixed_up);

  // No value adds a separator.
  for (const char separator : {'/', '?', '#', '&', '='}) {
    const auto count = [separator](const std::string& s) {
      return std::count(s.begin(), s.end(), separator);
    };
    FUZZ_CHECK(count(*rendered) == count(literals));
  }

  // Same scheme, host and port as the template.
  const url_parts want = curl_parts(benign);
  const url_parts got = curl_parts(*rendered);
  if (want.parsed) {
    FUZZ_CHECK(got.parsed);
    FUZZ_CHECK(got.scheme == want.scheme);
    FUZZ_CHECK(got.host == want.host);
    FUZZ_CHECK(got.port == want.port);
  }
}

void check_match(const std::vector<gather::route_config>& routes, const std::string& path) {
  const auto match = gather::match_route(routes, path);
  if (!match)
    return;
  FUZZ_CHECK(match->route < routes.size());
  const gather::route_config& route = routes[match->route];
  FUZZ_CHECK(!path.empty() && path[0] == '/');
  const auto slashes = static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
  FUZZ_CHECK(route.segments.empty() ? path == "/" || slashes == 1 : slashes == route.segments.size());
  std::size_t captures = 0;
  for (const auto& segment : route.segments)
    captures += segment.capture ? 1 : 0;
  FUZZ_CHECK(match->captures.size() == captures);
  for (const auto& [name, value] : match->captures)
    FUZZ_CHECK(!name.empty() && !value.empty());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  const gather::config& cfg = fixed();

  // A fuzzed template, validated the way a config file is.
  const std::string source = fdp.ConsumeRandomLengthString(256);
  nlohmann::json doc = {
      {"routes",
       {{{"path", "/f/{id}"},
         {"sections",
          {{{"name", "a"}, {"url", "http://h/"}, {"timeout_ms", 100}, {"required", true}},
           {{"name", "s"}, {"url", source}, {"timeout_ms", 100}, {"fallback", 0}}}}}}}};
  std::optional<gather::config> fuzzed;
  auto loaded =
      gather::load_config(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (loaded.value)
    fuzzed = std::move(*loaded.value);

  const std::string path = fdp.ConsumeRandomLengthString(128);
  check_match(cfg.routes, path);
  if (fuzzed)
    check_match(fuzzed->routes, path);

  if (fuzzed)
    check_render(fuzzed->routes[0].sections[1].url, fdp);
  const auto pick = fdp.ConsumeIntegralInRange<std::size_t>(0, 7);
  if (pick < 5)
    check_render(cfg.routes[0].sections[pick].url, fdp);
  else if (pick == 5)
    check_render(cfg.routes[1].sections[0].url, fdp);
  else
    check_render(cfg.routes[3].batch->url, fdp);
  return 0;
}
