// A real redis-server (Debian's, 7.0) for the tests of the shared store (docs/shared.md): on
// 127.0.0.1, a free port, no persistence; its own child process, killed when the test ends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/ports.hpp"

namespace gather::test {

class redis_server {
public:
  /// Starts redis-server on a free port (or on `port`), with `extra` arguments
  /// (e.g. {"--requirepass", "secret"}); returns once it accepts connections.
  explicit redis_server(std::vector<std::string> extra = {}, int port = 0);

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  /// One command through redis-cli; its output (trimmed).
  std::string cli(const std::vector<std::string>& args) const;
  void signal(int sig) { process_->signal(sig); }
  /// Kills it (SIGKILL) and waits for the exit.
  void kill();

private:
  int port_ = 0;
  std::vector<std::string> extra_;
  std::unique_ptr<child_process> process_;
};

} // namespace gather::test
