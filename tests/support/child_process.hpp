// The real `gather` binary as a child process: its output read line by line, signals, exit status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace gather::test {

/// Waits at most `limit` for child `pid` to exit, on a pidfd (an event, not a polling loop); true
/// with its waitpid status in `status` once it has, false if it still runs. Throws if the kernel
/// gives no pidfd.
bool await_exit(pid_t pid, int& status, std::chrono::milliseconds limit);

class child_process {
public:
  /// Starts `program` with `args`; stdout and stderr are piped back and read by a thread of its
  /// own all along, so a chatty child never blocks on a full pipe (its log lines would stall it).
  /// The child is SIGKILLed when the thread that started it ends (PR_SET_PDEATHSIG), so a crashed
  /// test leaves none behind: start children from the test's own thread, not a short-lived one.
  child_process(const std::string& program, const std::vector<std::string>& args);
  ~child_process(); ///< SIGKILLs and reaps a child still running

  /// The next stdout line that contains `needle`, waiting at most `limit`.
  std::optional<std::string> wait_for_line(const std::string& needle,
                                           std::chrono::milliseconds limit = std::chrono::seconds(10));
  /// Waits until stderr contains `needle` (at most `limit`).
  bool wait_for_stderr(const std::string& needle,
                       std::chrono::milliseconds limit = std::chrono::seconds(10));
  void signal(int sig);
  /// The child's process id (for /proc/<pid>/: its threads, its memory).
  pid_t pid() const { return pid_; }
  /// Waits for the exit; the exit code, or nullopt if it did not exit within `limit` (or died by a signal).
  std::optional<int> wait_exit(std::chrono::milliseconds limit = std::chrono::seconds(10));
  /// Everything the child wrote to stdout / stderr (only after wait_exit returned its exit code).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  /// A copy of what the child wrote to stderr so far (while it runs: for a failing test's message).
  std::string err_so_far() const;

private:
  void read_pipes(); ///< the reader thread: until both pipes are closed
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable grew_; ///< out_ or err_ got more, or the pipes closed
  std::string out_, err_;
  bool pipes_closed_ = false;
  std::size_t consumed_ = 0; ///< stdout bytes already returned as lines
  bool exited_ = false;
  std::optional<int> exit_code_;
  std::thread reader_;
};

/// Runs a command to completion: exit code, stdout, stderr.
struct run_result {
  int code = -1;
  std::string out, err;
};
run_result run(const std::string& program, const std::vector<std::string>& args);

/// Writes `text` to a fresh temporary file and returns its path.
std::string temp_file(const std::string& text, const std::string& suffix = ".json");

/// The gateway binary this build made (tests/CMakeLists.txt defines GATHER_BINARY).
inline const std::string binary = GATHER_BINARY;

} // namespace gather::test
