// The tests' real gRPC server (tests/support/grpc_library_server.py: Debian's grpcio, asyncio,
// handlers registered from the descriptor set protoc made), started once per test case; it
// reports what it saw on its stdout, one JSON line per event.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"

namespace gather::test {

class grpc_library {
public:
  grpc_library();
  /// Another server of the same kind: `script` (under tests/support/) serving `descriptor_set`
  /// (grpc_cart_server.py: the write tests' shop.v1.Cart).
  grpc_library(const std::string& script, const std::string& descriptor_set);
  std::string target() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// The first event line holding `needle` not taken yet, parsed. Lines of other events stay for
  /// later asks: concurrent calls (a page's GetBook and SearchBooks) reach the server in any order.
  nlohmann::json event(const std::string& needle);
  /// The server's process (a test that kills it, or reads its id).
  child_process& process() { return process_; }

private:
  child_process process_;
  int port_ = 0;
  std::vector<std::string> lines_; ///< read from the server, not taken by an ask yet
};

} // namespace gather::test
