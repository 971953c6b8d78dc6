#!/usr/bin/env bash
# An instruction profile of the gateway's request path: `gather serve` under callgrind, a Python
# downstream on loopback, 50 warm-up requests, then N sequential keep-alive requests counted
# (callgrind_control -z before them, -d after). Instructions, not time: the same build gives the
# same profile whatever else the machine does (docs/performance.md).
#
#   bench/callgrind.sh [SECTIONS [N [OUT]]]   (default 4 sections, 300 requests, /tmp/gather.callgrind)
#   HANG=1 bench/callgrind.sh 4 100           (one more optional section whose downstream never
#                                              answers, 50 ms timeout, a fallback: S2's shape)
#   BOOK=1 bench/callgrind.sh 0 100           (the seed's book page: GetBook and SearchBooks over
#                                              gRPC from build/bench/grpc_downstream, stock over
#                                              HTTP; SECTIONS is ignored)
#   callgrind_annotate --inclusive=yes --threshold=100 OUT.1 | less
#   bench/callgrind_split.py OUT.1 N build     (by library and by stage; bench/callgrind_table.sh
#                                              runs S0, S1, S2's shape and the book page)
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
DOWN= GW= GRPC=
grpc_in=
trap '[[ -n $grpc_in ]] && exec {grpc_in}>&-; kill $GW $DOWN $GRPC 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_downstream "$WORK"
GPORT=0
if [[ ${BOOK:-} == 1 ]]; then
  probe=${GRPC_DOWNSTREAM:-$(dirname "$BIN")/bench/grpc_downstream}
  [[ -x $probe ]] || { echo "build it first: cmake --build build --target grpc_downstream" >&2; exit 1; }
  exec {grpc_in}> >(exec "$probe" 0 0 "$WORK/protos" > "$WORK/grpc.port")
  GRPC=$!
  until [[ -s $WORK/grpc.port ]]; do sleep 0.05; done
  GPORT=$(head -1 "$WORK/grpc.port")
fi
python3 - "$SECTIONS" "$DPORT" "${HANG:-}" "$GPORT" "$WORK/protos" > "$WORK/config.json" <<'PY'
import json, sys
n, port, hang, gport, protos = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
cfg = {"listen": "127.0.0.1:0"}
if gport != "0":
    g = "http://127.0.0.1:%s" % gport
    cfg["protos"] = {"files": ["linkd/v3/library.proto"], "import_paths": [protos]}
    sections = [
        {"name": "meta", "required": True, "timeout_ms": 300,
         "grpc": {"target": g, "method": "linkd.v3.Library/GetBook", "message": {"isbn": "{query.isbn}"}}},
        {"name": "related", "timeout_ms": 300, "fallback": [],
         "grpc": {"target": g, "method": "linkd.v3.Library/SearchBooks",
                  "message": {"query": "{query.isbn}", "page_size": 5}, "max_messages": 5}},
        {"name": "stock", "url": "http://127.0.0.1:%s/stock" % port, "timeout_ms": 300, "fallback_from": "meta"}]
else:
    sections = [{"name": "s%d" % i, "url": "http://127.0.0.1:%s/s%d" % (port, i), "timeout_ms": 1000,
                 "required": True} for i in range(n)]
    if hang:
        sections.append({"name": "hung", "url": "http://127.0.0.1:%s/hang" % port, "timeout_ms": 50,
                         "fallback": {"v": None}})
cfg["routes"] = [{"path": "/p", "sections": sections}]
print(json.dumps(cfg))
PY
q="n"
[[ ${BOOK:-} == 1 ]] && q="isbn=978-7-111-12345-7&n"
rm -f "$OUT" "$OUT".*
valgrind --tool=callgrind --callgrind-out-file="$OUT" --log-file="$WORK/valgrind.log" \
  "$BIN" serve --config "$WORK/config.json" > "$WORK/out" 2>/dev/null &
GW=$!
port=$(gateway_port "$WORK/out" "$GW")
curl -sf -o /dev/null "http://127.0.0.1:$port/p?$q=[1-50]"
callgrind_control -z "$GW" > /dev/null 2>&1
curl -sf -o /dev/null "http://127.0.0.1:$port/p?$q=[1-$N]"
callgrind_control -d "$GW" > /dev/null 2>&1
kill -INT "$GW"; wait "$GW" || true; GW=
total=$(callgrind_annotate "$OUT.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "sections=$SECTIONS hang=${HANG:-0} book=${BOOK:-0} requests=$N instructions/request=$((total / N)) profile=$OUT.1"
