#!/usr/bin/env bash
# bench/s1_best_runs.sh [RUNS]: `bench/run.sh s1_best` RUNS times (default 10), each with the
# gateway's request log kept, and one line per run: its S1b row and how many of its requests had
# a section that ended `timeout` or answered 5xx. What issue #47 asks of the HTTP/2 pool under
# churn: ten runs, no non-200 (the row's column after p99) and no section timeout.
# Environment: GATHER_BIN (default build/gather), DURATION as bench/run.sh takes it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-10}
BIN=$(realpath "${GATHER_BIN:-$ROOT/build/gather}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# run.sh throws the gateway's stderr (its request log) away: a wrapper keeps it.
printf '#!/bin/bash\nexec %q "$@" 2>>%q\n' "$BIN" "$WORK/gw.log" > "$WORK/gather"
chmod +x "$WORK/gather"
for ((i = 1; i <= RUNS; i++)); do
  : > "$WORK/gw.log"
  row=$(GATHER_BIN=$WORK/gather "$ROOT/bench/run.sh" s1_best 2>/dev/null | grep '^S1b' || echo "S1b: no row")
  timeouts=$(grep -c '"status":"timeout"' "$WORK/gw.log" || true)
  failed=$(grep -c '"status":5' "$WORK/gw.log" || true)
  echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) run $i: requests with a section timeout $timeouts, 5xx $failed | $row"
done
