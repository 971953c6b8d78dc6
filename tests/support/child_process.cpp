#include "support/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gather::test {

using clock_type = std::chrono::steady_clock;

child_process::child_process(const std::string& program, const std::vector<std::string>& args) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  // argv is built before fork: in a multithreaded test binary the child may only make
  // async-signal-safe calls until execv (an allocation can deadlock on a lock another thread held).
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A test binary that crashes never runs the destructor: the child goes with it, rather than
    // keep serving, and holding the descriptors it inherited (ports, the suite's lock files).
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
      ::_exit(127);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  reader_ = std::thread{[this] { read_pipes(); }};
}

child_process::~child_process() {
  if (!exited_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable())
    reader_.join(); // the pipes close when the child is gone
  ::close(out_fd_);
  ::close(err_fd_);
}

void child_process::read_pipes() {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  std::string* into[2] = {&out_, &err_};
  int open_pipes = 2;
  char buf[65536];
  while (open_pipes > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      auto n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      std::lock_guard<std::mutex> guard{mutex_};
      if (n > 0) {
        into[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        fds[i].fd = -1; // EOF (or an error): poll ignores negative descriptors
        --open_pipes;
      }
    }
    grew_.notify_all();
  }
  std::lock_guard<std::mutex> guard{mutex_};
  pipes_closed_ = true;
  grew_.notify_all();
}

std::optional<std::string> child_process::wait_for_line(const std::string& needle,
                                                        std::chrono::milliseconds limit) {
  const auto end = clock_type::now() + limit;
  std::unique_lock<std::mutex> lock{mutex_};
  for (;;) {
    for (auto nl = out_.find('\n', consumed_); nl != std::string::npos; nl = out_.find('\n', consumed_)) {
      auto line = out_.substr(consumed_, nl - consumed_);
      consumed_ = nl + 1;
      if (line.find(needle) != std::string::npos)
        return line;
    }
    if (pipes_closed_ || grew_.wait_until(lock, end) == std::cv_status::timeout)
      return std::nullopt;
  }
}

bool child_process::wait_for_stderr(const std::string& needle, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock{mutex_};
  return grew_.wait_for(lock, limit, [&] { return err_.find(needle) != std::string::npos || pipes_closed_; }) &&
         err_.find(needle) != std::string::npos;
}

std::string child_process::err_so_far() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return err_;
}

void child_process::signal(int sig) {
  ::kill(pid_, sig);
}

bool await_exit(pid_t pid, int& status, std::chrono::milliseconds limit) {
  // A pidfd becomes readable when the child exits: an event to wait for, not a polling loop.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); // glibc 2.36: no C++ decl
  if (pidfd < 0)
    throw std::runtime_error("pidfd_open failed");
  pollfd fd{pidfd, POLLIN, 0};
  const auto end = clock_type::now() + limit;
  bool exited = false;
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock_type::now());
    if (left.count() <= 0)
      break;
    ::poll(&fd, 1, static_cast<int>(left.count()) + 1);
  }
  ::close(pidfd);
  return exited;
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds limit) {
  if (!exited_) {
    int status = 0;
    if (!await_exit(pid_, status, limit))
      return std::nullopt;
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? std::optional<int>{WEXITSTATUS(status)} : std::nullopt;
    reader_.join(); // everything it wrote is in out_ and err_
  }
  return exit_code_;
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
