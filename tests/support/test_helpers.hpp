// Small helpers many tests share (header-only: they use Catch's REQUIRE, which the benchmarks that
// link tests/support do not have).
#pragma once

#include <regex>
#include <string>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/gateway_fixture.hpp"

namespace gather::test {

/// An optional section: `fallback` {"fallback": true} unless `extra` brings its own.
inline nlohmann::json optional_section(const std::string& name, const std::string& url, int timeout_ms,
                                       nlohmann::json extra = nlohmann::json::object()) {
  if (!extra.contains("fallback"))
    extra["fallback"] = {{"fallback", true}};
  return section(name, url, timeout_ms, extra);
}

/// The answer's body as JSON; the test stops when no answer came.
inline nlohmann::json body_of(const httplib::Result& r) {
  REQUIRE(r);
  return nlohmann::json::parse(r->body);
}

/// The port in `gather serve`'s "listening on http(s)://127.0.0.1:PORT" line.
inline int port_of(const std::string& listening_line) {
  std::smatch m;
  REQUIRE(std::regex_search(listening_line, m, std::regex{R"(listening on https?://127\.0\.0\.1:(\d+))"}));
  return std::stoi(m[1]);
}

} // namespace gather::test
