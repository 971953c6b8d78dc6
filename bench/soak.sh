#!/usr/bin/env bash
# Soak test: `gather serve` under mixed healthy / hanging / failing traffic at a moderate rate for
# SECONDS (default 1800 = 30 min), RSS / threads / fds sampled every 10 s into a CSV, then a
# verdict on growth after the warm-up.
#
#   bench/soak.sh [SECONDS] [RPS] [BUILD_DIR]      e.g. bench/soak.sh 180 40 build
#
# Builds BUILD_DIR (default build, Release) targets gather and soak if needed. Output in
# BUILD_DIR/soak/: soak.csv, gateway.log (the request log). Exit 0: nothing grew; 1: something did.
set -euo pipefail
seconds=${1:-1800}
rps=${2:-40}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${3:-$root/build}
warmup=$(( seconds >= 600 ? 120 : seconds / 3 ))
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target gather soak >/dev/null
mkdir -p "$build/soak"
exec "$build/bench/soak" --gather "$build/gather" --seconds "$seconds" --rps "$rps" \
  --warmup "$warmup" --csv "$build/soak/soak.csv" --log "$build/soak/gateway.log"
