#!/usr/bin/env bash
# Cost curves, Gather beside its peers in one run (docs/performance-history.md, "Cost curves"): CPU per
# request against the sections per request (1, 4, 16, 64 instant sections) and against the
# downstream body's size (200 B, 10 KB, 100 KB, 1 MB, one section), the memory of idle
# keep-alive connections (1,000 and 10,000) and the memory under requests in flight (S3's route
# under 1,000, 5,000 and 10,000 connections). Rounds interleaved (Gather, peer, peer, Gather, ...),
# medians per point, a table, and one SVG per curve made with gnuplot (gnuplot-nox; only here,
# never at build or test time).
#
#   bench/curves.sh [curve...]     curves: sections body idle inflight (default: all four)
#
# Environment: ROUNDS (default 3), PEERS (space-separated peer binaries, absolute paths; default
# the OpenResty and Node peers at ../shared/peers), GATHER_BIN, DURATION and the rest as
# bench/run.sh takes them (CURVE_SECTIONS, CURVE_BODIES, CURVE_IDLE, CURVE_INFLIGHT: the points); OUT, the folder
# the SVGs and the data go to (default docs/).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$ROOT/docs}
read -r -a PEER_LIST <<< "${PEERS:-$ROOT/../shared/peers/openresty/gather-openresty $ROOT/../shared/peers/node-gateway}"
GATHER=${GATHER_BIN:-$ROOT/build/gather}
curves=("$@")
((${#curves[@]})) || curves=(sections body idle inflight)
scenarios=()
for c in "${curves[@]}"; do scenarios+=("curve_$c"); done
ROWS=$(mktemp)
trap 'rm -f "$ROWS" "$ROWS.log"' EXIT

labels=(Gather)
bins=("$GATHER")
for p in "${PEER_LIST[@]}"; do
  case $p in
    *openresty*) labels+=(OpenResty) ;;
    *node*) labels+=(Node) ;;
    *) labels+=("$(basename "$p")") ;;
  esac
  bins+=("$p")
done

for ((r = 1; r <= ROUNDS; r++)); do
  # Each round in another order, so that no side always runs first (the load drifts).
  order=($(seq 0 $((${#bins[@]} - 1))))
  ((r % 2 == 0)) && order=($(seq $((${#bins[@]} - 1)) -1 0))
  for k in "${order[@]}"; do
    echo "== round $r: ${labels[k]} (${bins[k]})"
    GATHER_BIN=${bins[k]} "$ROOT/bench/run.sh" "${scenarios[@]}" | tee -a "$ROWS.log" |
      awk -v who="${labels[k]}" '
        /^C[SB] / {print who, $1, $2, $4, $8, $12, $NF}          # who curve x req/s non200 us/req load
        /^CI / {gsub(",", ""); print who, "CI", $2, $6, $8, $9, $NF} # who CI n rss_before rss_after KiB/conn load
        /^CF / {split($11, m, "/"); print who, "CF", $2, $4, $8, $12, m[2], $NF} # ... us/req rss_MiB_load load
      ' >> "$ROWS"
  done
done

echo
echo "medians of $ROUNDS interleaved rounds; load1 at each row: $(awk '{print $NF}' "$ROWS" | sort -n | tr '\n' ' ')"
mkdir -p "$OUT"
python3 - "$ROWS" "$OUT" "${labels[@]}" <<'PY'
import statistics, subprocess, sys
rows, out, sides = sys.argv[1], sys.argv[2], sys.argv[3:]
data = {}
for line in open(rows):
    f = line.split()
    data.setdefault((f[1], f[2], f[0]), []).append(f[3:-1])
size = {"200": 200, "10k": 10_000, "100k": 100_000, "1m": 1_000_000}
def xval(curve, x):
    return size.get(x, None) or float(x)
curves = {
    "CS": ("sections per request (instant downstream, 16 connections)", "sections", "us CPU per request",
           "cost-sections.svg"),
    "CB": ("downstream body size (one section, 16 connections)", "body bytes", "us CPU per request",
           "cost-body.svg"),
    "CI": ("idle keep-alive connections", "connections", "MiB RSS added", "cost-idle.svg"),
    "CF": ("requests in flight (S3: a hung optional section, one request per connection)", "connections",
           "MiB RSS under load", "cost-inflight.svg"),
}
for curve, (title, xlabel, ylabel, svg) in curves.items():
    xs = sorted({x for c, x, _ in data if c == curve}, key=lambda x: xval(curve, x))
    if not xs:
        continue
    print("\n%s" % title)
    if curve == "CI":
        print("| connections | " + " | ".join("%s MiB added (KiB/conn)" % s for s in sides) + " |")
    elif curve == "CF":
        print("| connections | " + " | ".join("%s MiB RSS (µs CPU/req, req/s)" % s for s in sides) + " |")
    else:
        print("| %s | " % xlabel + " | ".join("%s µs CPU/req (req/s)" % s for s in sides) +
              " | " + " | ".join("Gather / %s" % s for s in sides[1:]) + " |")
    print("|" + "---|" * (1 + len(sides) + (0 if curve in ("CI", "CF") else len(sides) - 1)))
    table = open("%s/%s.dat" % (out, svg[:-4]), "w")
    table.write("# x " + " ".join(sides) + "\n")
    for x in xs:
        cells, ys, ratios = [], [], []
        for s in sides:
            r = data.get((curve, x, s))
            if not r:
                cells.append("-"); ys.append("NaN"); continue
            if curve == "CI":
                before = statistics.median(float(v[0]) for v in r)
                after = statistics.median(float(v[1]) for v in r)
                added = (after - before) / 1024
                cells.append("%.1f (%.2f)" % (added, (after - before) / float(x)))
                ys.append("%.2f" % added)
            elif curve == "CF":
                rss = statistics.median(float(v[3]) for v in r)
                cpu = statistics.median(float(v[2]) for v in r)
                rps = statistics.median(float(v[0]) for v in r)
                non200 = max(int(v[1]) for v in r)
                cpu_text = "no answer in a round" if cpu == float("inf") else "%.0f" % cpu
                cells.append("%.0f (%s, %.0f)%s" % (rss, cpu_text, rps, "" if non200 == 0 else " %d non-200" % non200))
                ys.append("%.0f" % rss)
            else:
                cpu = statistics.median(float(v[2]) for v in r)
                rps = statistics.median(float(v[0]) for v in r)
                non200 = max(int(v[1]) for v in r)
                if cpu == float("inf"): # not one answer in a round (run.sh divides by 0 requests)
                    cells.append("no answer"); ys.append("NaN"); continue
                cells.append("%.0f (%.0f)%s" % (cpu, rps, "" if non200 == 0 else " %d non-200" % non200))
                ys.append("%.1f" % cpu)
        if curve not in ("CI", "CF"):
            g = ys[0]
            for y in ys[1:]:
                ratios.append("×%.2f" % (float(g) / float(y)) if "NaN" not in (g, y) else "-")
        label = {"CS": x, "CB": x.replace("k", " KB").replace("1m", "1 MB").replace("200", "200 B")}.get(curve, x)
        print("| %s | %s |%s" % (label, " | ".join(cells), "".join(" %s |" % r for r in ratios)))
        table.write("%s %s\n" % (xval(curve, x), " ".join(ys)))
    table.close()
    plot = ", ".join("'%s/%s.dat' using 1:%d with linespoints lw 2 title '%s'" % (out, svg[:-4], i + 2, s)
                     for i, s in enumerate(sides))
    script = "\n".join([
        "set terminal svg size 720,420 dynamic font 'sans,12'",
        "set output '%s/%s'" % (out, svg),
        "set title '%s'" % title.replace("'", ""),
        "set xlabel '%s'" % xlabel, "set ylabel '%s'" % ylabel,
        "set logscale x", "set logscale y" if curve not in ("CI", "CF") else "set yrange [0:*]",
        "set key top left", "set grid",
        "plot " + plot, ""])
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print("(%s/%s)" % (out, svg))
PY
