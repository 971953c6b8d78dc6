// Headless Chromium for the tests that need a real browser (tests/support/chromium.hpp).
#include "support/chromium.hpp"
#include "support/child_process.hpp"

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace gather::test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* const chromium_binary = "/usr/bin/chromium";

void require_chromium() {
  if (!fs::exists(chromium_binary))
    FAIL("the browser tests need Debian's chromium at " << chromium_binary
                                                          << ": install it with `apt-get install -y chromium`");
}

/// Chromium's stderr without the D-Bus noise of a machine without a session bus, last 4000 bytes.
std::string interesting_lines(const std::string& err) {
  std::istringstream in{err};
  std::string line, kept;
  while (std::getline(in, line))
    if (line.find("dbus") == std::string::npos && line.find("D-Bus") == std::string::npos)
      kept += line + "\n";
  return kept.size() > 4000 ? kept.substr(kept.size() - 4000) : kept;
}

/// Runs headless Chromium once (in a process group of its own, so that a hung browser and its
/// helpers are killed together), with an empty profile and nothing phoning home.
/// --run-all-compositor-stages-before-draw: without it, --screenshot together with
/// --virtual-time-budget hung in about one run out of four on a page that keeps fetching.
browser_result run_chromium_once(const std::vector<std::string>& extra, std::chrono::seconds limit) {
  require_chromium();
  char dir_template[] = "/tmp/gather-chromium-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  const std::string profile{dir};
  const std::string out_path = profile + ".out", err_path = profile + ".err";
  std::vector<std::string> args{chromium_binary,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--user-data-dir=" + profile,
                                "--disable-background-networking",
                                "--disable-component-update",
                                "--disable-sync",
                                "--no-first-run",
                                "--disable-quic",
                                "--disable-dev-shm-usage",
                                "--disable-extensions",
                                "--hide-scrollbars",
                                "--mute-audio",
                                "--run-all-compositor-stages-before-draw"};
  args.insert(args.end(), extra.begin(), extra.end());
  // Built before fork: the child of a multithreaded binary makes only async-signal-safe calls.
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(out, 1);
    ::dup2(err, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(chromium_binary, argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also from here: no race with the child's own call
  browser_result result;
  int status = 0;
  const bool exited = await_exit(pid, status, limit);
  ::kill(-pid, SIGKILL); // the browser's helpers, and the browser itself when it hung
  if (!exited)
    ::waitpid(pid, &status, 0);
  result.finished = exited;
  result.code = exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  std::error_code ec;
  fs::remove_all(profile, ec);
  fs::remove(out_path, ec);
  fs::remove(err_path, ec);
  return result;
}

/// Runs Chromium until `done` accepts a run that exited 0. Headless Chromium with a virtual time
/// budget is known to hang now and then (a run that has not finished in 45 s is killed); such a
/// run is retried, twice at most, with a warning. A run that exits with an error is not retried.
browser_result run_chromium(const std::vector<std::string>& extra,
                            const std::function<bool(const browser_result&)>& done) {
  for (int attempt = 1;; ++attempt) {
    auto r = run_chromium_once(extra, std::chrono::seconds(45));
    INFO("chromium " << extra.back() << ", attempt " << attempt
                     << (r.finished ? ", exit code " + std::to_string(r.code) : std::string{", hung"})
                     << "; its stderr:\n" << interesting_lines(r.err));
    if (r.finished) {
      REQUIRE(r.code == 0);
      REQUIRE(done(r));
      return r;
    }
    if (attempt == 3)
      FAIL("headless chromium hung three times in a row");
    WARN("headless chromium hung; trying again");
  }
}

/// The page's DOM after `budget_ms` of virtual time (polls every 1000 ms of it).
std::string dump_dom(const std::string& url, int budget_ms, const std::string& size) {
  return run_chromium({"--virtual-time-budget=" + std::to_string(budget_ms), "--window-size=" + size,
                       "--dump-dom", url},
                      [](const browser_result& r) { return r.out.find("</html>") != std::string::npos; })
    .out;
}

} // namespace gather::test
