// tests/downstream/h2/h2_server.py (python3-h2) in its own process: the HTTP/2 downstream of the
// client's tests, well-behaved and hostile (its top says what each path gets).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace gather::test {

inline const std::string h2_server_script = GATHER_SOURCE_DIR "/tests/downstream/h2/h2_server.py";

/// h2_server.py in its own process, listening on 127.0.0.1.
struct h2_downstream_server {
  child_process process;
  int port = 0;
  explicit h2_downstream_server(std::vector<std::string> args = {})
    : process("/usr/bin/python3", with_script(std::move(args))) {
    const auto line = process.wait_for_line("PORT ");
    REQUIRE(line);
    port = std::stoi(line->substr(line->find("PORT ") + 5));
  }
  std::string url(const std::string& path, const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port) + path;
  }
  /// The next line the server printed that contains `needle` (within 5 s).
  std::string line_with(const std::string& needle) {
    auto line = process.wait_for_line(needle, std::chrono::seconds(5));
    REQUIRE(line);
    return *line;
  }
  static std::vector<std::string> with_script(std::vector<std::string> args) {
    args.insert(args.begin(), h2_server_script);
    return args;
  }
};

} // namespace gather::test
