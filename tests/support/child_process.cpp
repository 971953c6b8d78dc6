#include "support/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace gather::test {

using clock_type = std::chrono::steady_clock;

child_process::child_process(const std::string& program, const std::vector<std::string>& args) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

child_process::~child_process() {
  if (!exited_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::close(out_fd_);
  ::close(err_fd_);
}

void child_process::pump(std::chrono::milliseconds limit) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, static_cast<int>(limit.count())) <= 0)
    return;
  char buf[4096];
  if (fds[0].revents) {
    auto n = ::read(out_fd_, buf, sizeof buf);
    if (n > 0)
      out_.append(buf, static_cast<std::size_t>(n));
  }
  if (fds[1].revents) {
    auto n = ::read(err_fd_, buf, sizeof buf);
    if (n > 0)
      err_.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<std::string> child_process::wait_for_line(const std::string& needle,
                                                        std::chrono::milliseconds limit) {
  auto end = clock_type::now() + limit;
  for (;;) {
    for (auto nl = out_.find('\n', consumed_); nl != std::string::npos; nl = out_.find('\n', consumed_)) {
      auto line = out_.substr(consumed_, nl - consumed_);
      consumed_ = nl + 1;
      if (line.find(needle) != std::string::npos)
        return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock_type::now());
    if (left.count() <= 0)
      return std::nullopt;
    pump(left);
  }
}

bool child_process::wait_for_stderr(const std::string& needle, std::chrono::milliseconds limit) {
  auto end = clock_type::now() + limit;
  while (err_.find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock_type::now());
    if (left.count() <= 0)
      return false;
    pump(left);
  }
  return true;
}

void child_process::signal(int sig) {
  ::kill(pid_, sig);
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds limit) {
  auto end = clock_type::now() + limit;
  while (clock_type::now() < end) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      for (int i = 0; i < 100; ++i) // drain what is left in the pipes
        pump(std::chrono::milliseconds{1});
      if (WIFEXITED(status))
        return WEXITSTATUS(status);
      return std::nullopt;
    }
    pump(std::chrono::milliseconds{10}); // also keeps the pipes from filling up
  }
  return std::nullopt;
}

run_result run(const std::string& program, const std::vector<std::string>& args) {
  child_process child{program, args};
  run_result result;
  auto code = child.wait_exit(std::chrono::seconds(30));
  result.code = code ? *code : -1;
  result.out = child.out();
  result.err = child.err();
  return result;
}

std::string temp_file(const std::string& text, const std::string& suffix) {
  std::string pattern = "/tmp/gather-test-XXXXXX" + suffix;
  int fd = ::mkstemps(pattern.data(), static_cast<int>(suffix.size()));
  if (fd < 0)
    throw std::runtime_error("mkstemps failed");
  ::close(fd);
  std::ofstream{pattern} << text;
  return pattern;
}

} // namespace gather::test
