#include "support/grpc_library.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

namespace gather::test {

grpc_library::grpc_library() : grpc_library("grpc_library_server.py", GATHER_TEST_DESCRIPTOR_SET) {}

grpc_library::grpc_library(const std::string& script, const std::string& descriptor_set)
    : process_("/usr/bin/python3", {std::string(GATHER_SOURCE_DIR) + "/tests/support/" + script,
                                    descriptor_set}) {
  auto line = process_.wait_for_line("port ");
  REQUIRE(line);
  port_ = std::stoi(line->substr(line->find(' ') + 1));
}

nlohmann::json grpc_library::event(const std::string& needle) {
  for (;;) {
    const auto held = std::find_if(lines_.begin(), lines_.end(),
                                   [&](const std::string& l) { return l.find(needle) != std::string::npos; });
    if (held != lines_.end()) {
      auto parsed = nlohmann::json::parse(*held);
      lines_.erase(held);
      return parsed;
    }
    auto line = process_.wait_for_line("");
    REQUIRE(line);
    lines_.push_back(std::move(*line));
  }
}

} // namespace gather::test
