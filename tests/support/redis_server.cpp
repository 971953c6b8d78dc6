#include "support/redis_server.hpp"

#include <csignal>
#include <stdexcept>

namespace gather::test {

redis_server::redis_server(std::vector<std::string> extra, int port) : extra_(std::move(extra)) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = port ? port : unused_port();
    std::vector<std::string> args{"--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--daemonize", "no", "--logfile", ""};
    args.insert(args.end(), extra_.begin(), extra_.end());
    process_ = std::make_unique<child_process>("/usr/bin/redis-server", args);
    if (process_->wait_for_line("Ready to accept connections"))
      return;
    process_.reset();
  }
  throw std::runtime_error("redis-server did not start");
}

std::string redis_server::cli(const std::vector<std::string>& args) const {
  std::vector<std::string> all{"-p", std::to_string(port_)};
  for (std::size_t i = 0; i + 1 < extra_.size(); ++i)
    if (extra_[i] == "--requirepass")
      all.insert(all.end(), {"--no-auth-warning", "-a", extra_[i + 1]});
  all.insert(all.end(), args.begin(), args.end());
  auto result = run("/usr/bin/redis-cli", all);
  while (!result.out.empty() && (result.out.back() == '\n' || result.out.back() == '\r'))
    result.out.pop_back();
  return result.out;
}

void redis_server::kill() {
  if (!process_)
    return;
  process_->signal(SIGKILL);
  process_->wait_exit();
  process_.reset();
}

} // namespace gather::test
