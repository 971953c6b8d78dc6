#!/usr/bin/env bash
# Side by side: Gather against one or more peers, rounds interleaved (A B C A B C ...), medians per
# scenario, and the ratios Gather / each peer. Every side is measured over its whole process tree
# (bench/run.sh), so a wrapper whose children do the work is counted in full.
#
#   bench/compare.sh [scenario...]      scenarios of bench/run.sh (default: s0 s1 s2)
#
# Environment: ROUNDS (default 3); PEERS, space-separated peer binaries (default: PEER_BIN, else
# the Node BFF at ../shared/peers/node-gateway; `PEERS="$N $O"` with the OpenResty peer
# ../shared/peers/openresty/gather-openresty measures all three in one run); GATHER_BIN, DURATION
# and the rest as bench/run.sh takes them. Prints every round's rows, then one table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
read -r -a PEER_LIST <<< "${PEERS:-${PEER_BIN:-$ROOT/../shared/peers/node-gateway}}"
GATHER=${GATHER_BIN:-$ROOT/build/gather}
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(s0 s1 s2)
ROWS=$(mktemp)
trap 'rm -f "$ROWS" "$ROWS.log"' EXIT

# A side's label: "gather", else the peer's folder and file name (peers/node-gateway,
# openresty/gather-openresty, baseline/gather: never "gather" alone, which is this build's); one
# more folder in front while two sides would read alike (wt-a/build/gather, wt-b/build/gather).
sides=(gather)
for p in "${PEER_LIST[@]}"; do
  label="$(basename "$(dirname "$p")")/$(basename "$p")" rest=$(dirname "$(dirname "$p")")
  while printf '%s\n' "${sides[@]}" | grep -qxF "$label" && [[ $rest != / && $rest != . ]]; do
    label="$(basename "$rest")/$label" rest=$(dirname "$rest")
  done
  sides+=("$label")
done

for ((r = 1; r <= ROUNDS; r++)); do
  for ((k = 0; k < ${#sides[@]}; k++)); do
    who=${sides[k]}; bin=$GATHER
    ((k > 0)) && bin=${PEER_LIST[k - 1]}
    echo "== round $r: $who ($bin)"
    # Scenario names (S0..S4, S1b; "book page") have one to three words after them: read the row's
    # figures from its end (the name is its first word).
    spans=${SPANS:-}; [[ $(basename "$bin") == gather ]] || spans= # a peer takes no `tracing` key
    SPANS=$spans GATHER_BIN=$bin "$ROOT/bench/run.sh" "${scenarios[@]}" | tee -a "$ROWS.log" |
      awk -v who="$who" 'function flush() { if (row != "") print row, u, k, sl, pr, mf, st; row = "" }
        /^(S[0-9][a-z]? |book page )/ { flush(); u = k = sl = pr = mf = st = "-"
                     row = who " " $1 " " $(NF-10) " " $(NF-7) " " $(NF-6) " " $(NF-4) " " $(NF-3) " " $(NF-2) " " $NF }
        /us_cpu\/req user/ { u = $3; sub(/,/, "", u); k = $5; sub(/;/, "", k); st = ($8 == "" ? "-" : $8) } # the user/kernel split of the row above, and the steal beside it
        /switches\/req sleeps/ { sl = $3; sub(/,/, "", sl); pr = $5; sub(/;/, "", pr); mf = ($8 == "" ? "-" : $8) } # its context switches, page faults
        END { flush() }' >> "$ROWS"
  done
done
cat "$ROWS.log"

echo
echo "medians of $ROUNDS interleaved rounds (req/s, p99 ms, non-200, threads idle/load, RSS MiB idle/load, us CPU/req, of it user/kernel, context switches per request: sleeps/preempted, minor page faults per request, the machine's steal); load1 at each row: $(awk '{print $9}' "$ROWS" | sort -n | tr '\n' ' ')"
echo "the machine's steal during each row (its CPU time the hypervisor gave other guests), in the rows' order: $(awk '{printf "%s %s %s, ", $2, $1, $15}' "$ROWS")"
python3 - "$ROWS" "${sides[@]}" <<'PY'
import statistics, sys
rows = {}
num = lambda x: float("nan") if x == "-" else float(x)  # "-": a row printed without its user/kernel line
for line in open(sys.argv[1]):
    who, scen, rps, p99, non200, threads, rss, cpu, load, user, kernel, sleeps, preempted, faults, steal = line.split()
    rows.setdefault((scen, who), []).append((float(rps), float(p99), int(non200), threads, rss, float(cpu),
                                             num(user), num(kernel), num(sleeps), num(preempted), num(faults),
                                             num(steal.rstrip("%"))))
sides = sys.argv[2:]
fmt = "%-4s %-17s %9s %8s %7s %11s %11s %9s %13s %15s %7s %7s"
print(fmt % ("", "", "req/s", "p99_ms", "non200", "threads", "rss_MiB", "us/req", "user/kernel",
             "sleeps/preempt", "faults", "steal%"))
for scen in sorted({s for s, _ in rows}):
    med = {}
    for who in sides:
        r = rows.get((scen, who))
        if not r:
            continue
        med[who] = [statistics.median(x[i] for x in r) for i in (0, 1, 5, 6, 7, 8, 9, 10, 11)]
        print(fmt % (scen, who, "%.0f" % med[who][0], "%.1f" % med[who][1],
                     max(x[2] for x in r), r[-1][3], r[-1][4], "%.1f" % med[who][2],
                     "%.0f/%.0f" % (med[who][3], med[who][4]), "%.2f/%.2f" % (med[who][5], med[who][6]), "%.2f" % med[who][7],
                     "%.1f" % med[who][8]))
    g = med.get("gather")
    for who in sides[1:]:
        p = med.get(who)
        if g and p:
            print("%-4s gather / %s: req/s x%.2f, p99 x%.2f, CPU/req x%.2f (user x%.2f, kernel x%.2f)" %
                  (scen, who, g[0] / p[0], g[1] / p[1], g[2] / p[2], g[3] / p[3], g[4] / p[4]))
PY
