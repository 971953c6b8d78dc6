#!/usr/bin/env bash
# Data cache misses per request with many requests waiting at once, without hardware counters:
# `gather serve` under callgrind's cache model, its last level set to one core's L2 (1 MiB) and its
# first to 32 KiB, on S3's route (a 20 ms section and an optional one whose downstream never
# answers, 1 s timeout) under N connections of wrk. Counted over a 20 s window after warm-up
# (callgrind_control -z / -d); prints the misses per request (the window's requests, as wrk counts
# them) by library and the functions that miss most. See docs/performance.md.
#
#   bench/cache_misses.sh [N [TOP]]     (default 300 connections, 25 functions; GATHER_BIN as run.sh)
#
# Needs valgrind, wrk and python3. Under valgrind the gateway serves ~200 requests a second, so at
# a few hundred connections some `base` calls pass their 500 ms timeout: the row says how many.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GATHER_BIN:-$ROOT/build/gather}
N=${1:-300}
TOP=${2:-25}
WORK=$(mktemp -d)
OUT=$WORK/callgrind.out
source "$ROOT/bench/valgrind_common.sh"
DOWN= GW=
trap 'kill $GW $DOWN 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_downstream "$WORK"
cat > "$WORK/config.json" <<JSON
{"listen": "127.0.0.1:0", "max_inflight": $((N + 100)), "routes": [{"path": "/p/{id}", "deadline_ms": 1500, "sections": [
  {"name": "base", "url": "http://127.0.0.1:$DPORT/d20", "timeout_ms": 500, "required": true},
  {"name": "reviews", "url": "http://127.0.0.1:$DPORT/hang", "timeout_ms": 1000, "fallback": {"score": 0}}]}]}
JSON
valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 --callgrind-out-file="$OUT" \
  --log-file="$WORK/valgrind.log" "$BIN" serve --config "$WORK/config.json" > "$WORK/out" 2>/dev/null &
GW=$!
gw_port=$(gateway_port "$WORK/out" "$GW")
URL=http://127.0.0.1:$gw_port/p/1
wrk -t1 -c"$N" -d15s --timeout 20s "$URL" > /dev/null 2>&1 || true # warm-up: the pools fill
wrk -t1 -c"$N" -d8s --timeout 20s "$URL" > /dev/null 2>&1 || true  # and the waiting settles
callgrind_control -z "$GW" > /dev/null 2>&1
wrk -t1 -c"$N" -d20s --timeout 20s "$URL" > "$WORK/wrk" 2>&1 || true
callgrind_control -d "$GW" > /dev/null 2>&1
kill -INT "$GW"; wait "$GW" || true; GW=
requests=$(awk '/requests in/ {print $1}' "$WORK/wrk")
non2xx=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk"); non2xx=${non2xx:-0}
echo "connections=$N requests=$requests (not 200: $non2xx)"
python3 - "$OUT.1" "$requests" "$TOP" <<'PY'
import collections, re, sys
path, n, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names, objs = {}, {}
def name_of(table, text):  # callgrind's compressed names: "(id) name" once, then "(id)"
    m = re.match(r'\((\d+)\)(?: (.*))?', text)
    if not m:
        return text
    if m.group(2):
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), '?')
events, fn, ob, in_call = [], None, None, False
by_fn, by_ob = collections.Counter(), collections.Counter()
totals = collections.Counter()
for line in open(path, errors='replace'):
    line = line.rstrip('\n')
    if line.startswith('events:'):
        events = line.split()[1:]
    elif line.startswith('ob='):
        ob = name_of(objs, line[3:])
    elif line.startswith('fn='):
        fn = name_of(names, line[3:])
    elif line.startswith('cob='):
        name_of(objs, line[4:])
    elif line.startswith('cfn='):
        name_of(names, line[4:])
    elif line.startswith('calls='):
        in_call = True
    elif line and (line[0].isdigit() or line[0] in '+-*'):
        if in_call:  # the inclusive cost of a call: already counted where it was spent
            in_call = False
            continue
        cost = dict(zip(events, map(int, line.split()[1:])))
        for k, v in cost.items():
            totals[k] += v
        ll = cost.get('DLmr', 0) + cost.get('DLmw', 0)
        by_fn[fn] += ll
        by_ob[ob] += ll
print("per request: instructions %.0f, L1 data misses %.0f, L2-sized last-level data misses %.1f" % (
    totals['Ir'] / n, (totals['D1mr'] + totals['D1mw']) / n, (totals['DLmr'] + totals['DLmw']) / n))
for o, c in by_ob.most_common(6):
    print("  %7.1f  %s" % (c / n, o))
print("functions with the most last-level data misses per request:")
for f, c in by_fn.most_common(top):
    print("  %7.1f  %s" % (c / n, f[:150]))
PY
