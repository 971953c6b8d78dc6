#!/usr/bin/env bash
# An instruction profile of the gateway's request path: `gather serve` under callgrind, a Python
# downstream on loopback, 50 warm-up requests, then N sequential keep-alive requests counted
# (callgrind_control -z before them, -d after). Instructions, not time: the same build gives the
# same profile whatever else the machine does (docs/performance.md).
#
#   bench/callgrind.sh [SECTIONS [N [OUT]]]   (default 4 sections, 300 requests, /tmp/gather.callgrind)
#   HANG=1 bench/callgrind.sh 4 100           (one more optional section whose downstream never
#                                              answers, 50 ms timeout, a fallback: S2's shape)
#   callgrind_annotate --inclusive=yes --threshold=100 OUT.1 | less
#
# Needs valgrind and curl; GATHER_BIN as bench/run.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GATHER_BIN:-$ROOT/build/gather}
SECTIONS=${1:-4}
N=${2:-300}
OUT=${3:-/tmp/gather.callgrind}
WORK=$(mktemp -d)
source "$ROOT/bench/valgrind_common.sh"
DOWN= GW=
trap 'kill $GW $DOWN 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_downstream "$WORK"
python3 - "$SECTIONS" "$DPORT" "${HANG:-}" > "$WORK/config.json" <<'PY'
import json, sys
n, port, hang = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
sections = [{"name": "s%d" % i, "url": "http://127.0.0.1:%s/s%d" % (port, i), "timeout_ms": 1000,
             "required": True} for i in range(n)]
if hang:
    sections.append({"name": "hung", "url": "http://127.0.0.1:%s/hang" % port, "timeout_ms": 50,
                     "fallback": {"v": None}})
print(json.dumps({"listen": "127.0.0.1:0", "routes": [{"path": "/p", "sections": sections}]}))
PY
rm -f "$OUT" "$OUT".*
valgrind --tool=callgrind --callgrind-out-file="$OUT" --log-file="$WORK/valgrind.log" \
  "$BIN" serve --config "$WORK/config.json" > "$WORK/out" 2>/dev/null &
GW=$!
port=$(gateway_port "$WORK/out" "$GW")
curl -sf -o /dev/null "http://127.0.0.1:$port/p?n=[1-50]"
callgrind_control -z "$GW" > /dev/null 2>&1
curl -sf -o /dev/null "http://127.0.0.1:$port/p?n=[1-$N]"
callgrind_control -d "$GW" > /dev/null 2>&1
kill -INT "$GW"; wait "$GW" || true; GW=
total=$(callgrind_annotate "$OUT.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "sections=$SECTIONS hang=${HANG:-0} requests=$N instructions/request=$((total / N)) profile=$OUT.1"
