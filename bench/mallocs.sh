#!/usr/bin/env bash
# Allocations (or instructions) per request, counts that do not depend on the machine's load: over a
# whole gateway run of N sequential keep-alive requests (curl's URL globbing), minus an idle run of
# the same config, both under valgrind: DHAT counts the blocks allocated (whichever allocator the
# binary links), cachegrind without its cache model (MEASURE=instructions) the user-space
# instructions of every thread. Instructions are the way to compare two builds when the rounds of
# bench/compare.sh move by more than the difference (this machine has no hardware counters).
#
#   bench/mallocs.sh [SECTIONS [N]]    (default 1 section, 1000 requests; GATHER_BIN as run.sh;
#                                       CHUNKED=1: the downstream sends its bodies chunked, as
#                                       bench/run.sh's nginx does, instead of with a Content-Length)
#   MEASURE=instructions bench/mallocs.sh 4 300
#
# Needs valgrind (apt-get install -y valgrind) and curl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GATHER_BIN:-$ROOT/build/gather}
SECTIONS=${1:-1}
N=${2:-1000}
WORK=$(mktemp -d)
MEASURE=${MEASURE:-mallocs}
source "$ROOT/bench/valgrind_common.sh"
DOWN=
trap 'kill $DOWN 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_downstream "$WORK"
python3 - "$SECTIONS" "$DPORT" > "$WORK/config.json" <<'PY'
import json, sys
n, port = int(sys.argv[1]), sys.argv[2]
print(json.dumps({"listen": "127.0.0.1:0", "routes": [{"path": "/p", "sections": [
    {"name": "s%d" % i, "url": "http://127.0.0.1:%s/s%d" % (port, i), "timeout_ms": 1000, "required": True}
    for i in range(n)]}]}))
PY
count() { # count REQUESTS: malloc calls (or instructions) over one whole run
  local out=$WORK/out stat=$WORK/stat port
  : > "$out"
  local tool=(--tool=dhat --dhat-out-file=/dev/null --soname-synonyms=somalloc='*jemalloc*')
  [[ $MEASURE == mallocs ]] || tool=(--tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null)
  valgrind "${tool[@]}" --trace-children=yes --log-file="$stat" \
    "$BIN" serve --config "$WORK/config.json" > "$out" 2>/dev/null &
  local pid=$!
  port=$(gateway_port "$out" "$pid") || return 1
  (($1 > 0)) && curl -sf -o /dev/null "http://127.0.0.1:$port/p?n=[1-$1]"
  kill -INT "$pid"
  wait "$pid" || true
  if [[ $MEASURE == mallocs ]]; then
    awk '/Total: .* blocks/ {gsub(",", ""); print $(NF-1)}' "$stat"
  else
    awk '/I *refs:/ {gsub(",", "", $NF); print $NF}' "$stat"
  fi
}
idle=$(count 0)
busy=$(count "$N")
echo "sections=$SECTIONS requests=$N $MEASURE/request=$(( (busy - idle) / N )) (idle run $idle, busy run $busy)"
