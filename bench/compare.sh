#!/usr/bin/env bash
# Side by side: Gather against a peer (default: the Node BFF in ../shared/peers), rounds
# interleaved (A B A B ...), medians per scenario, and the ratios Gather / peer.
#
#   bench/compare.sh [scenario...]      scenarios of bench/run.sh (default: s0 s1 s2)
#
# Environment: ROUNDS (default 3), PEER_BIN (default ../shared/peers/node-gateway), GATHER_BIN,
# DURATION and the rest as bench/run.sh takes them. Prints every round's rows, then one table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
PEER_BIN=${PEER_BIN:-$ROOT/../shared/peers/node-gateway}
GATHER=${GATHER_BIN:-$ROOT/build/gather}
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(s0 s1 s2)
ROWS=$(mktemp)
trap 'rm -f "$ROWS"' EXIT

for ((r = 1; r <= ROUNDS; r++)); do
  for who in gather peer; do
    bin=$GATHER; [[ $who == peer ]] && bin=$PEER_BIN
    echo "== round $r: $who ($bin)"
    # Scenario names have one to three words: read the row's figures from its end.
    GATHER_BIN=$bin "$ROOT/bench/run.sh" "${scenarios[@]}" | tee -a "$ROWS.log" |
      awk -v who="$who" '/^S[0-9] / {print who, $1, $(NF-10), $(NF-7), $(NF-6), $(NF-4), $(NF-2)}' >> "$ROWS"
  done
done
cat "$ROWS.log"; rm -f "$ROWS.log"

echo
echo "medians of $ROUNDS interleaved rounds (req/s, p99 ms, non-200, threads idle/load, us CPU/req)"
python3 - "$ROWS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    who, scen, rps, p99, non200, threads, cpu = line.split()
    rows.setdefault((scen, who), []).append((float(rps), float(p99), int(non200), threads, float(cpu)))
fmt = "%-4s %-7s %9s %8s %7s %11s %9s"
print(fmt % ("", "", "req/s", "p99_ms", "non200", "threads", "us/req"))
for scen in sorted({s for s, _ in rows}):
    med = {}
    for who in ("gather", "peer"):
        r = rows.get((scen, who))
        if not r:
            continue
        med[who] = [statistics.median(x[i] for x in r) for i in (0, 1, 4)]
        print(fmt % (scen, who, "%.0f" % med[who][0], "%.1f" % med[who][1],
                     max(x[2] for x in r), r[-1][3], "%.0f" % med[who][2]))
    if len(med) == 2:
        g, p = med["gather"], med["peer"]
        print("%-4s ratio   req/s x%.2f, p99 x%.2f, CPU/req x%.2f (gather / peer)" %
              (scen, g[0] / p[0], g[1] / p[1], g[2] / p[2]))
PY
