#!/usr/bin/env bash
# The fault lab (docs/security.md, "Real faults"): gateway, downstreams, a fault proxy, a DNS
# resolver and the load generator inside a network namespace of their own (127.0.0.1 of that
# namespace only), one fault after another. Needs root, iproute2, nftables (and the tbf qdisc), nginx;
# skipped with the reason otherwise (exit 77). Opt-in: never run by ctest.
#
#   bench/faults/run.sh [BUILD_DIR] [lab.py options]      e.g. bench/faults/run.sh build --only dns
#
# Output: BUILD_DIR/faults/faults.json (one row per fault), gateway.log, and the table on stdout.
# Exit 0: every row on time, right statuses, no leak, normal service after the fault.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[[ $# -gt 0 ]] && shift
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target gather >/dev/null
mkdir -p "$build/faults"
exec python3 "$root/bench/faults/lab.py" --gather "$build/gather" --out "$build/faults/faults.json" \
  --log "$build/faults/gateway.log" "$@"
