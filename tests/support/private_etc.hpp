// Name lookups against files of the test's own, without touching the machine's: this test binary
// run again under `unshare --mount`, with a hosts file and a resolv.conf bind-mounted over
// /etc/hosts and /etc/resolv.conf for that process alone, running one hidden test case (tagged
// `[.]`), which finds the hosts file's path in an environment variable and may rewrite it in place.
#pragma once

#include <string>

#include "support/child_process.hpp"

namespace gather::test {

/// Whether a mount namespace can be made here (root); a test without one skips with a WARN,
/// except under CI, which runs as root.
bool can_make_mount_namespace();

/// Runs `test_name` of this binary inside the namespace, `env`=`hosts` in its environment;
/// `resolv` is the resolv.conf it sees. The result's out holds Catch's summary.
run_result run_with_private_etc(const std::string& hosts, const std::string& resolv, const std::string& env,
                                const std::string& test_name);

/// The inner run passed: exit 0, and exactly its one test case ran (not "No tests ran").
bool inner_run_passed(const run_result& r);

} // namespace gather::test
