#!/usr/bin/env bash
# Soak test: `gather serve` for SECONDS (default 3600) at RPS (default 100) under a mixed load
# (aggregates with slow, hedged, hanging, failing and refused sections, cache hits, batch POSTs,
# abandoned requests, connection churn, a configuration reload every minute). RSS, threads,
# descriptors, actors and connections are sampled every 10 s into a CSV, drawn as an SVG, and
# judged for growth after the warm-up (default 300 s, a third of shorter runs).
#
#   bench/soak.sh [SECONDS] [RPS] [BUILD_DIR]      e.g. nice -n 5 bench/soak.sh 3600 100 build
#
# Opt-in: never run by ctest. Builds BUILD_DIR (default build, Release) targets gather and soak if
# needed. Output in BUILD_DIR/soak/: soak.csv, soak.svg (bench/soak_plot.sh), soak.out (the
# driver's report), gateway.log (the request log). Exit 0: nothing grew; 1: something did; 2: setup.
set -euo pipefail
seconds=${1:-3600}
rps=${2:-100}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${3:-$root/build}
warmup=$(( seconds >= 900 ? 300 : seconds / 3 ))
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target gather soak >/dev/null
mkdir -p "$build/soak"
status=0
"$build/bench/soak" --gather "$build/gather" --seconds "$seconds" --rps "$rps" --warmup "$warmup" \
  --csv "$build/soak/soak.csv" --log "$build/soak/gateway.log" | tee "$build/soak/soak.out" || status=$?
"$root/bench/soak_plot.sh" "$build/soak/soak.csv" "$build/soak/soak.svg" "$warmup" || true
echo "plot: $build/soak/soak.svg"
exit "$status"
