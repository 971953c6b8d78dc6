// A `gather node` child process on 127.0.0.1, for the cluster tests: started with its flags, its
// address taken from its "listening on" line.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/test_helpers.hpp"

namespace gather::test {

struct node_child {
  /// `gather node --listen 127.0.0.1:PORT` plus `flags` (--allow ..., --allow-any, TLS ...);
  /// port 0: any free one.
  explicit node_child(std::vector<std::string> flags, int port = 0)
    : child(binary, with_listen(std::move(flags), port)) {
    auto line = child.wait_for_line("listening on");
    REQUIRE(line);
    std::smatch m;
    REQUIRE(std::regex_search(*line, m, std::regex{R"(127\.0\.0\.1:(\d+))"}));
    port_ = std::stoi(m[1]);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  child_process child;

private:
  static std::vector<std::string> with_listen(std::vector<std::string> flags, int port) {
    flags.insert(flags.begin(), {"node", "--listen", "127.0.0.1:" + std::to_string(port)});
    return flags;
  }
  int port_ = 0;
};

} // namespace gather::test
