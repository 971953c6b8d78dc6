// Debian's headless Chromium for the tests that need a real browser (the dashboard, EventSource):
// one run in a process group of its own with an empty profile, killed with its helpers when it
// hangs. A machine without /usr/bin/chromium fails these tests: they never pass silently.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gather::test {

extern const char* const chromium_binary;

/// Fails the test (with how to install it) when /usr/bin/chromium is missing.
void require_chromium();

/// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& p);

/// Chromium's stderr without the D-Bus noise of a machine without a session bus, last 4000 bytes.
std::string interesting_lines(const std::string& err);

struct browser_result {
  bool finished = false; ///< exited by itself within the limit
  int code = -1;
  std::string out, err;
};

/// One run of `chromium --headless ... extra`, killed after `limit`.
browser_result run_chromium_once(const std::vector<std::string>& extra, std::chrono::seconds limit);

/// Runs Chromium until `done` accepts a run that exited 0 (a hung run is retried, twice at most).
browser_result run_chromium(const std::vector<std::string>& extra,
                            const std::function<bool(const browser_result&)>& done);

/// The page's DOM after `budget_ms` of virtual time, in a window of `size` ("width,height").
std::string dump_dom(const std::string& url, int budget_ms = 4500, const std::string& size = "800,600");

} // namespace gather::test
