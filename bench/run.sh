#!/usr/bin/env bash
# Gather benchmarks (docs/performance.md). Never run by ctest.
#
#   bench/run.sh [scenario...]      scenarios: s0 s1 s2 s3 s4 tail_drill guards linear cluster (default: all),
#                                   stream (progressive answers; needs build/bench/stream_probe),
#                                   shape (S1 shaped against S1 unshaped, ROUNDS interleaved), and
#                                   s0_h2 s1_h2 (h2c with h2load), curve_sections curve_body curve_idle
#                                   curve_inflight (bench/curves.sh), book (the seed's book page over
#                                   gRPC), write_route (a write route against a read of the same
#                                   three calls) and grpc_call (one call over HTTP/1.1, HTTP/2 and gRPC; both
#                                   need build/bench/grpc_downstream), s1_dsh2 (S1's sections over
#                                   HTTP/1.1 against HTTP/2), s1_upstream (S1 through an upstream of
#                                   three endpoints against one origin) and s1_best (S1 with each side's best
#                                   downstream protocol: HTTP/2 for Gather, HTTP/1.1 for a peer):
#                                   not in the default list
#
# Environment: GATHER_BIN (default build-bench/gather, else build/gather), DURATION (wrk seconds,
# default 10), NGINX_PORT (default 18931), WRK_THREADS (default 2), PERF_OUT (if set: `perf record
# -g` of every process of the side's tree during each measured run, to PERF_OUT.<scenario>, so a
# peer's nginx workers are profiled too; PERF_CALLGRAPH, default dwarf,16384 as Debian's libraries
# have no frame pointers, or none for flat profiles; PERF_FREQ, samples per second, default 499),
# CLUSTER_NODES (default "0 1 2"), WRK_CPUS (if set: the measured wrk runs pinned there with
# taskset, e.g. 1), SYSCALLS (if set: `perf stat` counts the side's system calls per request during
# the measured run, root only), WAKERS (if set: who woke the side's busiest thread, and why, per
# request: bench/wakers.py; root), GATHER_TOP (a JSON object merged into every config's top level,
# e.g. '{"io_threads": 2}'), GATHER_ROUTE (a JSON object merged into every route), WRK_HEADER (a
# header every wrk request carries), S0_CONNS (S0's connections, default 16), S2_CONNS (S2's
# connections, default 64), S1_CONNS (S1's, default 64), SPANS (a sample ratio, e.g. 0.05: Gather
# exports that share of its requests' spans to bench/span_split.py, which prints under each row
# where a request's time went inside Gather: arrival to first call, the calls, last answer to
# answer; Gather builds only: the peers refuse the `tracing` key, and bench/compare.sh leaves it off
# for them).
# Under each row: its CPU split into user and kernel, and the side's context switches and minor
# page faults per request.
# Needs: nginx-light libnginx-mod-http-echo wrk (apt-get install -y nginx-light
# libnginx-mod-http-echo wrk), python3, curl; nghttp2-client (h2load) for s0_h2 and s1_h2.
#
# The downstream is the user's own nginx on loopback, in a temporary prefix (never the system
# service), started and stopped here. Each scenario starts a fresh `gather serve`, warms it up for
# 2 s, then runs `wrk --latency` and prints one table row: requests/s, p50/p90/p99, non-200s (and
# socket errors), the gateway's thread count and RSS (idle, and the maximum sampled every 0.2 s
# under load), CPU per request from utime+stime before/after, and the load average. Threads, RSS
# and CPU count the started process and all its descendants (a peer such as the OpenResty one is a
# wrapper whose nginx children do the work).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GATHER_BIN:-}
if [[ -z $BIN ]]; then
  if [[ -x $ROOT/build-bench/gather ]]; then BIN=$ROOT/build-bench/gather; else BIN=$ROOT/build/gather; fi
fi
DURATION=${DURATION:-10}
NPORT=${NGINX_PORT:-18931}
WRK_THREADS=${WRK_THREADS:-2}
TICKS=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/gather-bench.XXXXXX)
NGINX_PID=
SINK_PID=
GW_PID=
NODE_PIDS=()

cleanup() {
  [[ -n $GW_PID ]] && kill "$GW_PID" 2>/dev/null || true
  for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null || true
  [[ -n $SINK_PID ]] && kill "$SINK_PID" 2>/dev/null || true
  [[ -n ${GRPC_PID:-} ]] && kill "$GRPC_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

start_nginx() {
  mkdir -p "$WORK/nginx/tmp" "$WORK/nginx/www"
  chmod 755 "$WORK" "$WORK/nginx" "$WORK/nginx/www" # nginx workers (user nobody when run as root) read big.json
  python3 - "$WORK/nginx/www/big.json" <<'PY'
import json, sys
# ~200 KiB JSON object: two small fields the routes keep ("id", "summary") and a large array.
items = [{"sku": "sku-%06d" % i, "name": "item %d" % i, "price": i * 0.25, "tags": ["a", "b", "c"]}
         for i in range(2600)]
doc = {"id": 42, "summary": {"count": len(items), "currency": "CNY"}, "items": items}
open(sys.argv[1], "w").write(json.dumps(doc))
PY
  python3 - "$WORK/nginx/www" <<'PY2'
import json, sys
# JSON objects of about 200 B, 10 KB, 100 KB and 1 MB for the body-size curve (bench/curves.sh)
for name, size in (("200", 200), ("10k", 10_000), ("100k", 100_000), ("1m", 1_000_000)):
    item = len(json.dumps({"sku": "sku-000000", "price": 9.5})) + 2
    doc = {"id": 42, "items": [{"sku": "sku-%06d" % i, "price": 9.5} for i in range(max(1, (size - 24) // item))]}
    open("%s/body_%s.json" % (sys.argv[1], name), "w").write(json.dumps(doc))
PY2
  sed -e "s#@PREFIX@#$WORK/nginx#g" -e "s#@PORT@#$NPORT#g" -e "s#@H2PORT@#$((NPORT + 1))#g" "$ROOT/bench/conf/nginx.conf.in" \
    > "$WORK/nginx/nginx.conf"
  nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" &
  NGINX_PID=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$NPORT/instant" >/dev/null && return 0; sleep 0.1; done
  echo "nginx did not start" >&2; exit 1
}

# gateway config: gen_config FILE MAX_INFLIGHT ROUTE_JSON...
gen_config() {
  local file=$1 inflight=$2; shift 2
  GATHER_TOP=${GATHER_TOP:-} GATHER_ROUTE=${GATHER_ROUTE:-} SPANS=${SPANS:-} SPANS_PORT=${SPANS_PORT:-} python3 - "$file" "$inflight" "$NPORT" "$@" <<'PY'
import json, os, sys
file, inflight, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
routes = [json.loads(r.replace("@D@", "http://127.0.0.1:" + port)) for r in sys.argv[4:]]
for route in routes:  # GATHER_ROUTE: keys added to every route (bench/auth_cost.sh: auth, rate_limit)
    route.update(json.loads(os.environ.get("GATHER_ROUTE") or "{}"))
cfg = {"listen": "127.0.0.1:0", "max_inflight": inflight, "routes": routes}
cfg.update(json.loads(os.environ.get("GATHER_TOP") or "{}"))
if os.environ.get("SPANS_PORT"):  # SPANS: the requests' spans to bench/span_split.py's sink
    cfg["tracing"] = {"otlp_endpoint": "http://127.0.0.1:%s/v1/traces" % os.environ["SPANS_PORT"],
                      "sample_ratio": float(os.environ["SPANS"]), "export_interval_ms": 500}
json.dump(cfg, open(file, "w"), indent=1)
PY
}

# sections_json N PATH TIMEOUT: N sections "s0".."sN-1", s0 required, the rest optional.
sections_json() {
  python3 - "$@" <<'PY'
import json, sys
n, path, timeout = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
out = []
for i in range(n):
    s = {"name": "s%d" % i, "url": "@D@" + path, "timeout_ms": timeout}
    if i == 0: s["required"] = True
    else: s["fallback"] = {"v": None}
    out.append(s)
print(json.dumps(out))
PY
}

start_gateway() { # start_gateway CONFIG
  local out=$WORK/gw.out
  : > "$out"
  "$BIN" serve --config "$1" >"$out" 2>/dev/null &
  GW_PID=$!
  for _ in $(seq 100); do
    GW_PORT=$(sed -n 's#^listening on http://[0-9.]*:\([0-9]*\)$#\1#p' "$out")
    [[ -n $GW_PORT ]] && return 0
    sleep 0.1
  done
  echo "gateway did not start" >&2; cat "$out" >&2; exit 1
}

stop_gateway() {
  kill "$GW_PID" 2>/dev/null || true
  wait "$GW_PID" 2>/dev/null || true
  GW_PID=
}

# Every figure counts the started process and all its descendants: a peer may be a wrapper whose
# children do the work (bash -> nginx master -> worker), and reading only the started PID would
# make it look free. tree_of PID: the PID and its descendants, from /proc/*/stat parent links.
tree_of() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
    { pid = $1; line = $0; sub(/^[0-9]+ \(.*\) /, "", line); split(line, f, " "); parent[pid] = f[2] }
    END { keep[root] = 1; changed = 1
          while (changed) { changed = 0
            for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
          for (p in keep) print p }'
}
# the tree's files FILE (stat or status), one after the other; a process that ends meanwhile is skipped
# (FILE may be a pattern: task/*/status reads every thread's)
tree_cat() { local p; for p in $(tree_of "$1"); do cat /proc/"$p"/$2; done 2>/dev/null; }
# utime+stime (fields 14, 15), counted after the command name, which may hold spaces; with `user`
# utime alone (user space: the rest is the kernel's)
cpu_ticks() {
  tree_cat "$1" stat | awk -v user="${2:-}" '{ sub(/^[0-9]+ \(.*\) /, ""); t += $12 + (user ? 0 : $13) } END { print t + 0 }'
}
threads_of() { tree_cat "$1" status | awk '/^Threads:/ { n += $2 } END { print n + 0 }'; }
rss_kib() { tree_cat "$1" status | awk '/^VmRSS:/ { n += $2 } END { print n + 0 }'; }
# voluntary and involuntary context switches of every thread of the trees: "SLEEPS PREEMPTIONS"
switches() {
  local p; for p in "$@"; do tree_cat "$p" 'task/*/status'; done |
    awk '/^voluntary_ctxt_switches:/ { v += $2 } /^nonvoluntary_ctxt_switches:/ { n += $2 } END { print v + 0, n + 0 }'
}
# minor page faults of the trees (field 10, minflt, the whole process's): a page the allocator gave
# back to the kernel and touches again costs one
faults() { local p; for p in "$@"; do tree_cat "$p" stat; done | awk '{ sub(/^[0-9]+ \(.*\) /, ""); n += $8 } END { print n + 0 }'; }
# the machine's CPU time so far (all of it, and what the hypervisor gave other guests: steal),
# from /proc/stat's first line; a round whose steal is high ran on a machine shared more than usual
machine_cpu() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9; exit }' /proc/stat; }
# the thread of the trees that has used the most CPU so far (after the warm-up: the event loop)
busiest_thread() {
  local p; for p in "$@"; do
    for t in $(tree_of "$p"); do
      for s in /proc/"$t"/task/*/stat; do awk '{ n = $1; sub(/^[0-9]+ \(.*\) /, ""); print $12 + $13, n }' "$s"; done 2>/dev/null
    done
  done | sort -n | tail -1 | cut -d' ' -f2
}
# the sum over the gateway and its nodes (CPU_USER=user: user space only)
cpu_all() { local t=0; for p in "$@"; do t=$((t + $(cpu_ticks "$p" "${CPU_USER:-}"))); done; echo $t; }

sample_loop() { # sample_loop PID FILE: max threads and RSS every 0.2 s until killed
  local pid=$1 file=$2 th=0 rss=0 t r
  while kill -0 "$pid" 2>/dev/null; do
    t=$(threads_of "$pid" 2>/dev/null || echo 0); r=$(rss_kib "$pid" 2>/dev/null || echo 0)
    ((t > th)) && th=$t; ((r > rss)) && rss=$r
    # Written whole and renamed: a sampler killed in the middle of a write leaves the last sample,
    # never an empty file (a row once showed RSS "54/0").
    echo "$th $rss" > "$file.new" && mv -f "$file.new" "$file"
    sleep 0.2
  done
}

to_ms() { # wrk latency text (12.3us, 4.5ms, 1.2s, 2m) -> ms
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
    printf "%.2f", n }'
}

print_header() {
  printf '%-22s %6s %9s %8s %8s %8s %8s %7s %11s %11s %9s %9s %s\n' \
    scenario conns req/s p50_ms p90_ms p99_ms non200 sockerr threads_i/l rss_MiB_i/l us_cpu/req s_cpu/1k load1
}

# bench NAME CONFIG CONNS PATH [WRK_EXTRA...]: one row. Sets ROW_RPS, ROW_CPU_US.
# The calls each endpoint of the running gateway's upstreams took, from /debug/upstreams.
upstream_counts() {
  curl -s "http://127.0.0.1:$GW_PORT/debug/upstreams" | python3 -c '
import json, sys
for name, u in json.load(sys.stdin)["upstreams"].items():
    calls = [e["calls"]["ok"] + e["calls"]["failure"] + e["calls"]["other"] for e in u["endpoints"]]
    total = sum(calls) or 1
    print("    %s %s calls per endpoint: %s" % (name, u["balance"], ", ".join(
        "%s %d (%.1f%%)" % (e["address"], c, 100.0 * c / total) for e, c in zip(u["endpoints"], calls))))'
}

bench() {
  local name=$1 cfg=$2 conns=$3 path=$4; shift 4
  start_gateway "$cfg"
  local url="http://127.0.0.1:$GW_PORT$path"
  [[ -n ${SHOW_SAMPLE:-} ]] && { curl -s "$url" | head -c 600; echo; }
  # WRK_HEADER: one header every request carries (bench/auth_cost.sh: the bearer token).
  [[ -n ${WRK_HEADER:-} ]] && set -- -H "$WRK_HEADER" "$@"
  wrk -t"$WRK_THREADS" -c"$conns" -d2s --timeout 10s "$@" "$url" >/dev/null 2>&1 || true # warm-up
  sleep 0.5
  local th_idle rss_idle
  th_idle=$(threads_of "$GW_PID"); rss_idle=$(rss_kib "$GW_PID")
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local pids=("$GW_PID" "${NODE_PIDS[@]}")
  local c0; c0=$(cpu_all "${pids[@]}")
  local u0; u0=$(CPU_USER=user cpu_all "${pids[@]}")
  local sw0; sw0=$(switches "${pids[@]}")
  local f0; f0=$(faults "${pids[@]}")
  local m0; m0=$(machine_cpu)
  sample_loop "$GW_PID" "$WORK/sample" & local sampler=$!
  local perf_pid=
  if [[ -n ${PERF_OUT:-} ]]; then # profile the gateway during the measured run (docs/performance.md)
    local graph=(--call-graph "${PERF_CALLGRAPH:-dwarf,16384}"); [[ ${PERF_CALLGRAPH:-} == none ]] && graph=()
    perf record -F "${PERF_FREQ:-499}" "${graph[@]}" -p "$(tree_of "$GW_PID" | paste -sd,)" -o "$PERF_OUT.$name" -- sleep "$DURATION" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  local stat_pid=
  if [[ -n ${SYSCALLS:-} ]]; then # count the side's system calls during the measured run
    perf stat -x, -e 'syscalls:sys_enter_*' -p "$(tree_of "$GW_PID" | paste -sd,)" -o "$WORK/syscalls" -- sleep "$DURATION" >/dev/null 2>&1 &
    stat_pid=$!
  fi
  local wake_pid=
  if [[ -n ${WAKERS:-} ]]; then # who wakes the side's busiest thread (its loop), root only
    local busiest; busiest=$(busiest_thread "${pids[@]}")
    perf record -q -e sched:sched_wakeup --filter "pid == $busiest" -a -g -o "$WORK/wake.data" -- sleep "$DURATION" >/dev/null 2>&1 &
    wake_pid=$!
  fi
  local spans_t0; spans_t0=$(date +%s%N)
  [[ -n $SINK_PID ]] && : > "$WORK/spans" # the warm-up's spans, exported late, are left out by time too
  ${WRK_CPUS:+taskset -c "$WRK_CPUS"} wrk -t"$WRK_THREADS" -c"$conns" -d"${DURATION}s" --timeout 10s --latency "$@" "$url" > "$WORK/wrk.out" 2>&1 || true
  [[ -n $stat_pid ]] && wait "$stat_pid" 2>/dev/null || true
  [[ -n $wake_pid ]] && wait "$wake_pid" 2>/dev/null || true
  local ds_conns= # DS_PORT: the gateway's connections to that downstream port, kept alive after the run
  [[ -n ${DS_PORT:-} ]] && ds_conns=$(ss -Htn state established "( dport = :$DS_PORT )" | wc -l)
  local c1; c1=$(cpu_all "${pids[@]}")
  local u1; u1=$(CPU_USER=user cpu_all "${pids[@]}")
  local sw1; sw1=$(switches "${pids[@]}")
  local f1; f1=$(faults "${pids[@]}")
  local m1; m1=$(machine_cpu)
  [[ -n $perf_pid ]] && wait "$perf_pid" 2>/dev/null || true
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
  read -r th_load rss_load < "$WORK/sample" || true
  local up_counts= # UPSTREAM_COUNTS: the calls each upstream endpoint took (warm-up included)
  [[ -n ${UPSTREAM_COUNTS:-} ]] && up_counts=$(upstream_counts)
  stop_gateway
  local out=$WORK/wrk.out
  [[ -n ${SHOW_WRK:-} ]] && cat "$out" >&2 # wrk's own output (SHOW_WRK=1)
  local total rps p50 p90 p99 non2xx sockerr
  total=$(awk '/requests in/ {print $1}' "$out")
  rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
  p90=$(to_ms "$(awk '$1 == "90%" {print $2}' "$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$out"); non2xx=${non2xx:-0}
  sockerr=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' "$out"); sockerr=${sockerr:-0}
  print_row "$name" "$conns" "$rps" "$p50" "$p90" "$p99" "$non2xx" "$sockerr" "$th_idle/$th_load" \
    "$((rss_idle / 1024))/$((rss_load / 1024))" $((c1 - c0)) "$total" "$load"
  # where the gateway's CPU went: user space against the kernel (sockets, epoll, wake-ups)
  awk -v u=$((u1 - u0)) -v c=$((c1 - c0)) -v t="$TICKS" -v n="$total" -v m0="$m0" -v m1="$m1" \
    'BEGIN { split(m0, a, " "); split(m1, b, " "); all = b[1] - a[1]
             printf "    us_cpu/req user %.0f, kernel %.0f; machine steal %.1f%%\n", u / t / n * 1e6, (c - u) / t / n * 1e6,
                    (all > 0 ? 100 * (b[2] - a[2]) / all : 0) }'
  # how often the side's threads slept (each a wake-up later) and were preempted, per request
  awk -v a="$sw0" -v b="$sw1" -v f=$((f1 - f0)) -v n="$total" 'BEGIN { split(a, x, " "); split(b, y, " ")
    printf "    switches/req sleeps %.2f, preempted %.2f; minor faults/req %.2f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n, f / n }'
  grep '^LUA' "$out" | sed 's/^/    /' || true
  [[ -n $ds_conns ]] && echo "    downstream connections $ds_conns (to port $DS_PORT)"
  [[ -n $up_counts ]] && echo "$up_counts"
  if [[ -n ${SYSCALLS:-} ]]; then # per request (of wrk's count: the counting window is the same length)
    awk -F, -v n="$total" '$1 ~ /^[0-9]+$/ && $1 > 0 { sub(/^syscalls:sys_enter_/, "", $3); all += $1; part[$3] = $1 }
      END { printf "    syscalls/req %.2f:", all / n
            for (k in part) if (part[k] / n >= 0.05) printf " %s %.2f", k, part[k] / n; print "" }' "$WORK/syscalls"
  fi
  if [[ -n $SINK_PID ]]; then # less what the gateway had not exported when it stopped (< 0.5 s)
    "$ROOT/bench/span_split.py" report "$WORK/spans" "$spans_t0"
  fi
  if [[ -n ${WAKERS:-} ]]; then
    perf script -i "$WORK/wake.data" 2>/dev/null | "$ROOT/bench/wakers.py" "$total"
  fi
}

# print_row NAME CONNS RPS P50 P90 P99 NON200 ERRORS THREADS RSS CPU_TICKS REQUESTS LOAD: one table
# row, CPU per request from the ticks; sets ROW_RPS, ROW_CPU_US.
print_row() {
  local cpu_us cpu_k
  cpu_us=$(awk -v d="${11}" -v t="$TICKS" -v n="${12}" 'BEGIN {printf "%.0f", d / t / n * 1e6}')
  cpu_k=$(awk -v d="${11}" -v t="$TICKS" -v n="${12}" 'BEGIN {printf "%.3f", d / t / n * 1000}')
  printf '%-22s %6s %9s %8s %8s %8s %8s %7s %11s %11s %9s %9s %s\n' \
    "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}" "$cpu_us" "$cpu_k" "${13}"
  ROW_RPS=$3; ROW_CPU_US=$cpu_us
}

# bench_h2 NAME CONFIG PATH: one row over h2c (prior knowledge) with h2load: 4 connections, 100
# streams each (H2_CONNS, H2_STREAMS). p50/p90/p99 from h2load's per-request log. Sets ROW_RPS, ROW_CPU_US.
bench_h2() {
  local name=$1 cfg=$2 path=$3 conns=${H2_CONNS:-4} streams=${H2_STREAMS:-100}
  start_gateway "$cfg"
  local url="http://127.0.0.1:$GW_PORT$path"
  h2load -c"$conns" -m"$streams" -D 2 "$url" >/dev/null 2>&1 || true # warm-up
  sleep 0.5
  local th_idle rss_idle
  th_idle=$(threads_of "$GW_PID"); rss_idle=$(rss_kib "$GW_PID")
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local c0; c0=$(cpu_ticks "$GW_PID")
  sample_loop "$GW_PID" "$WORK/sample" & local sampler=$!
  h2load -c"$conns" -m"$streams" -D "$DURATION" --log-file="$WORK/h2load.log" "$url" > "$WORK/h2load.out" 2>&1 || true
  local c1; c1=$(cpu_ticks "$GW_PID")
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
  read -r th_load rss_load < "$WORK/sample" || true
  stop_gateway
  local total rps non2xx errors p50 p90 p99
  total=$(awk '/^requests:/ {print $8}' "$WORK/h2load.out") # succeeded
  rps=$(awk '/^finished in/ {gsub(",", ""); printf "%.0f", $4}' "$WORK/h2load.out")
  non2xx=$(awk '/^status codes:/ {gsub(",", ""); print $5 + $7 + $9}' "$WORK/h2load.out")
  errors=$(awk '/^requests:/ {gsub(",", ""); print $10 + $12}' "$WORK/h2load.out")
  read -r p50 p90 p99 < <(awk '{print $3}' "$WORK/h2load.log" | sort -n | awk '{v[NR] = $1}
    END {if (NR == 0) {print "- - -"; exit}
         printf "%.2f %.2f %.2f\n", v[int(NR * 0.50) + 1] / 1000, v[int(NR * 0.90) + 1] / 1000, v[int(NR * 0.99) + 1] / 1000}')
  print_row "$name" "${conns}x$streams" "$rps" "$p50" "$p90" "$p99" "$non2xx" "$errors" "$th_idle/$th_load" \
    "$((rss_idle / 1024))/$((rss_load / 1024))" $((c1 - c0)) "$total" "$load"
}

S2_LUA=$WORK/degraded.lua
write_lua() {
  cat > "$S2_LUA" <<'LUA'
-- counts answers that are not 200, and 200s without "degraded":true (S2 expects none of either)
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) non200 = 0; notdeg = 0; sample = "" end
function response(status, headers, body)
  if status ~= 200 then non200 = non200 + 1; sample = status .. " " .. string.sub(body, 1, 120)
  elseif not string.find(body, '"degraded":true', 1, true) then notdeg = notdeg + 1 end
end
function done(summary, latency, requests)
  local a, b, c = 0, 0, ""
  for _, t in ipairs(threads) do
    a = a + t:get("non200"); b = b + t:get("notdeg")
    if t:get("sample") ~= "" then c = t:get("sample") end
  end
  io.write(string.format("LUA non200=%d not_degraded=%d %s\n", a, b, c ~= "" and ("e.g. " .. c) or ""))
end
LUA
}

s0() {
  gen_config "$WORK/s0.json" 1024 \
    "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json 1 /instant 500)}"
  bench "S0 overhead" "$WORK/s0.json" "${S0_CONNS:-16}" /p/1
}

s1() {
  gen_config "$WORK/s1.json" 1024 \
    "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json 4 /d20 500)}"
  local conns=${S1_CONNS:-64}
  bench "S1 healthy 4x20ms" "$WORK/s1.json" "$conns" /p/1
  awk -v c="$conns" -v r="$ROW_RPS" 'BEGIN {printf "    ideal %d/20ms = %.0f req/s; ratio %.2f\n", c, c / 0.02, r / (c / 0.02)}'
}

# S1 through an upstream of three endpoints (docs/upstreams.md: the same nginx on 127.0.0.1, .2
# and .3) against S1 to one origin, for each balancer: ROUNDS (default 3) interleaved rounds, then
# the medians of CPU per request, and the calls each endpoint took.
s1_upstream() {
  local plain pooled
  plain=$(sections_json 4 /d20 500)
  pooled=$(python3 -c 'import json, sys
s = json.loads(sys.argv[1])
for x in s: x.update(url=x["url"].replace("@D@", "http://pool"))
print(json.dumps(s))' "$plain")
  gen_config "$WORK/s1one.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $plain}"
  local balance
  for balance in least_request round_robin; do
    GATHER_TOP="{\"upstreams\": {\"pool\": {\"balance\": \"$balance\", \"endpoints\": [\"127.0.0.1:$NPORT\", \"127.0.0.2:$NPORT\", \"127.0.0.3:$NPORT\"]}}}" \
      gen_config "$WORK/s1up_$balance.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $pooled}"
  done
  local r cpus0=() cpus1=() cpus2=()
  for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    bench "S1 one origin r$r" "$WORK/s1one.json" "${S1_CONNS:-64}" /p/1; cpus0+=("$ROW_CPU_US")
    UPSTREAM_COUNTS=1 bench "S1 upstream x3 least_request r$r" "$WORK/s1up_least_request.json" "${S1_CONNS:-64}" /p/1; cpus1+=("$ROW_CPU_US")
    UPSTREAM_COUNTS=1 bench "S1 upstream x3 round_robin r$r" "$WORK/s1up_round_robin.json" "${S1_CONNS:-64}" /p/1; cpus2+=("$ROW_CPU_US")
  done
  compare_medians "one-origin" "least_request" "${cpus0[*]}" "${cpus1[*]}"
  compare_medians "one-origin" "round_robin" "${cpus0[*]}" "${cpus2[*]}"
}

# S0 and S1 over h2c: the same routes, h2load with 4 connections x 100 streams (docs/performance.md).
s0_h2() {
  gen_config "$WORK/s0.json" 1024 \
    "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json 1 /instant 500)}"
  bench_h2 "S0 overhead h2c" "$WORK/s0.json" /p/1
}

s1_h2() {
  gen_config "$WORK/s1.json" 1024 \
    "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json 4 /d20 500)}"
  bench_h2 "S1 healthy 4x20ms h2c" "$WORK/s1.json" /p/1
}

s2() {
  local secs; secs=$(sections_json 4 /d20 500)
  secs=${secs%]}", {\"name\": \"reviews\", \"url\": \"@D@/hang\", \"timeout_ms\": 120, \"fallback\": {\"score\": 0, \"count\": 0}}]"
  gen_config "$WORK/s2.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 400, \"sections\": $secs}"
  write_lua
  local conns=${S2_CONNS:-64}
  bench "S2 fault drill" "$WORK/s2.json" "$conns" /p/1 -s "$S2_LUA"
  awk -v c="$conns" -v r="$ROW_RPS" 'BEGIN {printf "    ideal %d/120ms = %.0f req/s; ratio %.2f\n", c, c / 0.12, r / (c / 0.12)}'
}

# S3's route (and curve_inflight's): a 20 ms required section and an optional one that hangs
S3_SECTIONS='[{"name": "base", "url": "@D@/d20", "timeout_ms": 500, "required": true},
              {"name": "reviews", "url": "@D@/hang", "timeout_ms": 1000, "fallback": {"score": 0}}]'

s3() {
  gen_config "$WORK/s3.json" 1100 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1500, \"sections\": $S3_SECTIONS}"
  write_lua
  bench "S3 1000 in flight" "$WORK/s3.json" 1000 /p/1 -s "$S2_LUA"
  echo "    ideal 1000 conns / 1000 ms = 1000 req/s; ratio $(awk -v r="$ROW_RPS" 'BEGIN {printf "%.2f", r / 1000}')"
}

s4() {
  gen_config "$WORK/s4.json" 1024 \
    '{"path": "/b", "batch": {"url": "@D@/o/{item}", "max_items": 500, "concurrency": 64, "timeout_ms": 200, "deadline_ms": 10000}}'
  python3 -c 'import json; print(json.dumps({"items": list(range(500))}))' > "$WORK/s4.body"
  start_gateway "$WORK/s4.json"
  local url="http://127.0.0.1:$GW_PORT/b" ideal=$(( (500 + 63) / 64 * 50 + 200 ))
  curl -s -o /dev/null -X POST --data-binary '{"items": [1, 2, 3]}' "$url"
  local c0; c0=$(cpu_ticks "$GW_PID")
  local walls=()
  for run in 1 2 3 4 5; do
    local t0 t1 code
    t0=$(date +%s%N)
    code=$(curl -s -o "$WORK/s4.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      --data-binary @"$WORK/s4.body" "$url")
    t1=$(date +%s%N)
    walls+=($(( (t1 - t0) / 1000000 )))
    echo "    run $run: ${walls[-1]} ms, HTTP $code, counts $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"])' "$WORK/s4.out")"
  done
  local c1; c1=$(cpu_ticks "$GW_PID")
  local th; th=$(threads_of "$GW_PID")
  stop_gateway
  local median; median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 3p)
  echo "S4 batch 500x50ms 2% hang c=64: median ${median} ms, ideal ${ideal} ms (ceil(500/64)*50 + 200 ms timeout), ratio $(awk -v m="$median" -v i="$ideal" 'BEGIN {printf "%.2f", m / i}') (goal <= 1.50); CPU $(awk -v d=$((c1 - c0)) -v t="$TICKS" 'BEGIN {printf "%.0f", d / t / 5 * 1000}') ms per batch; threads $th; load $(cut -d' ' -f1 /proc/loadavg)"
}

# The tail drill (docs/resilience.md): four sections, one of whose downstream answers in 10 ms 95%
# of the time and in 250 ms 5% of the time; 64 connections. p99 without hedging, then with
# `hedge: {"percentile": 95}`, and the extra calls the hedges made to that downstream.
tail_route() { # tail_route HEDGE_JSON
  python3 - "$1" <<'PY'
import json, sys
secs = [{"name": "tail", "url": "@D@/tail", "timeout_ms": 500, "required": True}]
if sys.argv[1] != "none": secs[0]["hedge"] = json.loads(sys.argv[1])
for i in range(3): secs.append({"name": "s%d" % i, "url": "@D@/d10", "timeout_ms": 500, "fallback": {"v": None}})
print(json.dumps({"path": "/p/{id}", "deadline_ms": 1000, "sections": secs}))
PY
}

tail_drill() {
  local hedge label calls total
  PROBE=${PROBE:-$(dirname "$BIN")/bench/latency_probe}
  [[ -x $PROBE ]] || { echo "tail_drill needs $PROBE: cmake --build $(dirname "$BIN") --target latency_probe" >&2; return 1; }
  for hedge in none '{"percentile": 95}'; do
    label=none; [[ $hedge == none ]] || label=p95
    gen_config "$WORK/tail.json" 1024 "$(tail_route "$hedge")"
    start_gateway "$WORK/tail.json"
    "$PROBE" "http://127.0.0.1:$GW_PORT/p/1" 64 2 >/dev/null # warm-up
    : > "$WORK/nginx/tail.log" # counts the measured run's calls only
    local line; line=$("$PROBE" "http://127.0.0.1:$GW_PORT/p/1" 64 "$DURATION")
    calls=$(wc -l < "$WORK/nginx/tail.log")
    total=$(awk '{print $2}' <<< "$line")
    echo "tail drill hedge=$label: $line; calls to the tail downstream $calls, extra $(awk -v c="$calls" -v n="$total" 'BEGIN {printf "%.1f%%", (c / n - 1) * 100}'); load $(cut -d' ' -f1 /proc/loadavg)"
    curl -s "http://127.0.0.1:$GW_PORT/metrics" |
      grep -E '^gather_(hedges_total|retry_budget_denied_total)\{route="/p/\{id\}",section="tail"' | sed 's/^/    /'
    stop_gateway
  done
  echo "    goal with the hedge: p99 < 40 ms and under 10% extra calls to the tail downstream"
}

# S1 with every §9 mechanism configured but idle (hedge past any latency, a bulkhead and a
# circuit that never trip) against S1 as it is: the cost of the guards on the hot path.
guarded_sections() { # guarded_sections JSON: the same sections, each with a hedge, bulkhead, circuit
  python3 - "$1" "${GUARDS:-all}" <<'PY'
import json, sys
secs = json.loads(sys.argv[1])
only = sys.argv[2] if len(sys.argv) > 2 else "all"
for s in secs:
    if only in ("all", "hedge"): s["hedge"] = {"after_ms": 400}
    if only in ("all", "max_concurrent"): s["max_concurrent"] = 100000
    if only in ("all", "circuit"): s["circuit"] = {"failure_ratio": 0.5}
print(json.dumps(secs))
PY
}

guards() {
  local plain guarded
  plain=$(sections_json 4 /d20 500)
  guarded=$(guarded_sections "$plain")
  gen_config "$WORK/g0.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $plain}"
  bench "S1 no guards" "$WORK/g0.json" 64 /p/1
  gen_config "$WORK/g1.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $guarded}"
  bench "S1 all guards idle" "$WORK/g1.json" 64 /p/1
}

# Medians of two interleaved series of CPU per request: compare_medians "A label" "B label"
# "A's figures" "B's figures" [goal text]. Prints the rounds, both medians and B / A.
compare_medians() {
  python3 - "$@" <<'PY'
import statistics, sys
la, lb = sys.argv[1:3]
a, b = [list(map(float, x.split())) for x in sys.argv[3:5]]
goal = " (%s)" % sys.argv[5] if len(sys.argv) > 5 else ""
print("    us CPU/req per round: %s %s, %s %s" % (la, a, lb, b))
print("    medians: %s %.0f, %s %.0f: %s / %s x%.3f%s" % (la, statistics.median(a), lb, statistics.median(b),
      lb, la, statistics.median(b) / statistics.median(a), goal))
PY
}

# over_h2c SECTIONS_JSON: the same sections called over HTTP/2 on nginx's h2c port ("http2": true).
over_h2c() {
  python3 -c 'import json, sys
s = json.loads(sys.argv[1])
for x in s: x.update(url=x["url"].replace("@D@", "http://127.0.0.1:%s" % sys.argv[2]), http2=True)
print(json.dumps(s))' "$1" $((NPORT + 1))
}

# S1 as each side calls its downstreams best: a Gather build over HTTP/2 (h2c), a peer over
# HTTP/1.1 (nginx's proxy and Node's client speak HTTP/1.x upstream). The same page for the
# client, one row per side: run it with bench/compare.sh to set the sides side by side.
s1_best() {
  local secs port=$NPORT
  secs=$(sections_json 4 /d20 500)
  if [[ $(basename "$BIN") == gather ]]; then
    secs=$(over_h2c "$secs")
    port=$((NPORT + 1))
  fi
  gen_config "$WORK/s1best.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $secs}"
  DS_PORT=$port bench "S1b best downstream" "$WORK/s1best.json" "${S1_CONNS:-64}" /p/1
}

# S1 with its four sections called over HTTP/1.1 (@D@, a pool of connections) and over HTTP/2
# ("http2": true, nginx's h2c port, the calls multiplexed), ROUNDS interleaved rounds, 64
# connections: CPU per request, p99 and the downstream connections of each. A Gather build only:
# the peers call their downstreams over HTTP/1.1.
s1_dsh2() {
  local h1 h2
  h1=$(sections_json 4 /d20 500)
  h2=$(over_h2c "$h1")
  gen_config "$WORK/dsh1.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $h1}"
  gen_config "$WORK/dsh2.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $h2}"
  local r cpus1=() cpus2=()
  for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    DS_PORT=$NPORT bench "S1 h1 downstream r$r" "$WORK/dsh1.json" 64 /p/1; cpus1+=("$ROW_CPU_US")
    DS_PORT=$((NPORT + 1)) bench "S1 h2 downstream r$r" "$WORK/dsh2.json" 64 /p/1; cpus2+=("$ROW_CPU_US")
  done
  compare_medians "HTTP/1.1" "HTTP/2" "${cpus1[*]}" "${cpus2[*]}"
}

# S1 answered as a page's own object (docs/config.md#shape): the four sections rebuilt into two
# objects, whole data and fields found in the bytes, against S1 with its envelope. ROUNDS (default
# 3) interleaved rounds, unshaped then shaped in each, then the medians of CPU per request.
shape() {
  local plain; plain=$(sections_json 4 /d20 500)
  gen_config "$WORK/sh0.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $plain}"
  gen_config "$WORK/sh1.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $plain,
    \"shape\": {\"item\": {\"base\": \"{s0}\", \"title\": \"{s1.title}\", \"price\": \"{s1.price}\"},
                \"offer\": {\"id\": \"{s2.id}\", \"extra\": \"{s3}\", \"currency\": \"CNY\"}}}"
  local r cpus0=() cpus1=()
  for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    bench "S1 unshaped r$r" "$WORK/sh0.json" 64 /p/1; cpus0+=("$ROW_CPU_US")
    bench "S1 shaped r$r" "$WORK/sh1.json" 64 /p/1; cpus1+=("$ROW_CPU_US")
  done
  compare_medians unshaped shaped "${cpus0[*]}" "${cpus1[*]}" "goal <= x1.05"
}

linear() {
  for n in 1 4 16 64; do
    gen_config "$WORK/lin$n.json" 1024 \
      "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json "$n" /d20 500)}"
    bench "linear ${n}x20ms" "$WORK/lin$n.json" 64 /p/1
    echo "    CPU per section call: $(awk -v c="$ROW_CPU_US" -v n="$n" 'BEGIN {printf "%.1f", c / n}') us"
  done
}

# The gRPC downstream of `book` and `grpc_call`: bench/grpc_downstream (the demo's book service),
# GetBook answered and SearchBooks' ten books sent 20 ms after the request; its .proto under
# $WORK/protos, what the gateway's `protos.files` compiles. Sets GRPC_PORT and GRPC_TOP (the
# configuration's `protos`).
start_grpc_downstream() {
  [[ -n ${GRPC_PID:-} ]] && return 0
  local probe=${GRPC_DOWNSTREAM:-$(dirname "$BIN")/bench/grpc_downstream}
  [[ -x $probe ]] || { echo "build it first: cmake --build build --target grpc_downstream" >&2; exit 1; }
  exec {grpc_in}> >(exec "$probe" 20 0 "$WORK/protos" > "$WORK/grpc.port")
  GRPC_PID=$!
  for _ in $(seq 50); do GRPC_PORT=$(head -1 "$WORK/grpc.port" 2>/dev/null); [[ -n $GRPC_PORT ]] && break; sleep 0.1; done
  [[ -n $GRPC_PORT ]] || { echo "grpc_downstream did not start" >&2; exit 1; }
  GRPC_TOP="{\"protos\": {\"files\": [\"linkd/v3/library.proto\", \"shop/v1/cart.proto\"], \"import_paths\": [\"$WORK/protos\"]}}"
}

# The seed's book page: GetBook (unary, required), SearchBooks (a stream of 10 taken to 5) and
# stock over HTTP falling back to meta, each downstream 20 ms; deadline 800, 300 ms per hop.
book() {
  start_grpc_downstream
  local g="http://127.0.0.1:$GRPC_PORT"
  GATHER_TOP=$GRPC_TOP gen_config "$WORK/book.json" 1024 "{\"path\": \"/books/{isbn}\", \"deadline_ms\": 800, \"sections\": [
    {\"name\": \"meta\", \"required\": true, \"timeout_ms\": 300,
     \"grpc\": {\"target\": \"$g\", \"method\": \"linkd.v3.Library/GetBook\", \"message\": {\"isbn\": \"{isbn}\"}}},
    {\"name\": \"related\", \"timeout_ms\": 300, \"fallback\": [],
     \"grpc\": {\"target\": \"$g\", \"method\": \"linkd.v3.Library/SearchBooks\",
               \"message\": {\"query\": \"{isbn}\", \"page_size\": 5}, \"max_messages\": 5}},
    {\"name\": \"stock\", \"url\": \"@D@/d20\", \"timeout_ms\": 300, \"fallback_from\": \"meta\"}]}"
  DS_PORT=$GRPC_PORT bench "book page" "$WORK/book.json" "${BOOK_CONNS:-16}" /books/978-7-111-12345-7
}

# One section's call, the same 20 ms of downstream work three ways: HTTP/1.1 JSON (nginx), HTTP/2
# JSON ("http2": true, nginx's h2c port) and a unary gRPC call (GetBook); ROUNDS interleaved rounds
# (default 3), each row with its downstream connections.
grpc_call() {
  start_grpc_downstream
  local h1="{\"name\": \"s0\", \"required\": true, \"timeout_ms\": 300, \"url\": \"@D@/d20\"}"
  local h2="{\"name\": \"s0\", \"required\": true, \"timeout_ms\": 300, \"url\": \"http://127.0.0.1:$((NPORT + 1))/d20\", \"http2\": true}"
  local grpc="{\"name\": \"s0\", \"required\": true, \"timeout_ms\": 300, \"grpc\": {\"target\": \"http://127.0.0.1:$GRPC_PORT\", \"method\": \"linkd.v3.Library/GetBook\", \"message\": {\"isbn\": \"978-{id}\"}}}"
  local way r
  for way in h1 h2 grpc; do
    GATHER_TOP=$GRPC_TOP gen_config "$WORK/call_$way.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 800, \"sections\": [${!way}]}"
  done
  local -A port=([h1]=$NPORT [h2]=$((NPORT + 1)) [grpc]=$GRPC_PORT)
  for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    for way in h1 h2 grpc; do
      DS_PORT=${port[$way]} bench "call $way r$r" "$WORK/call_$way.json" "${CALL_CONNS:-16}" /p/1
    done
  done
}

# A write route against a read of the same three calls (docs/performance-history.md, "A write route against a read"): POST
# /carts/{cart}/items, whose write is the demo cart's AddItem (gRPC, the body's sku and quantity
# in its message) and whose reads, after it, are GetCart (gRPC) and a 20 ms HTTP call; against GET
# /p/{cart}, AddItem as a required section (its message from the path) and the same two reads
# waiting for it (2 hops each side). Every request names a cart of its own (wrk's Lua), so every
# AddItem succeeds. ROUNDS interleaved rounds (default 3), the medians of CPU per request.
write_route() {
  start_grpc_downstream
  local g="http://127.0.0.1:$GRPC_PORT"
  local reads="{\"name\": \"cart\", \"required\": true, \"timeout_ms\": 300,
      \"grpc\": {\"target\": \"$g\", \"method\": \"shop.v1.Cart/GetCart\", \"message\": {\"cart_id\": \"{add.cart_id}\"}}},
    {\"name\": \"page\", \"url\": \"@D@/d20?cart={add.cart_id}\", \"timeout_ms\": 300, \"fallback\": {}}"
  local call="\"grpc\": {\"target\": \"$g\", \"method\": \"shop.v1.Cart/AddItem\", \"message\": {\"cart_id\": \"{cart}\","
  GATHER_TOP=$GRPC_TOP gen_config "$WORK/write.json" 1024 "{\"path\": \"/carts/{cart}/items\", \"method\": \"POST\", \"deadline_ms\": 800,
    \"write\": {\"name\": \"add\", \"timeout_ms\": 300, $call \"sku\": \"{body.sku}\", \"quantity\": \"{body.quantity}\"}}},
    \"sections\": [$reads]}"
  GATHER_TOP=$GRPC_TOP gen_config "$WORK/read.json" 1024 "{\"path\": \"/p/{cart}\", \"deadline_ms\": 800, \"sections\": [
    {\"name\": \"add\", \"required\": true, \"timeout_ms\": 300, $call \"sku\": \"978-7-111-12345-6\", \"quantity\": 1}}},
    $reads]}"
  cat > "$WORK/write.lua" <<'LUA'
-- a cart of its own per request (the run's start, the thread and a count: never one of an earlier
-- round, whose carts the downstream still holds); counts answers that are not 200
local threads = {}
function setup(thread) table.insert(threads, thread); thread:set("tid", #threads) end
function init(args) non200 = 0; n = 0; seed = os.time() .. "-" .. tid end
request = function()
  n = n + 1
  local cart = "c" .. seed .. "-" .. n
  if wrk.method == "POST" then
    return wrk.format("POST", "/carts/" .. cart .. "/items", {["Content-Type"] = "application/json"},
                      '{"sku": "978-7-111-12345-6", "quantity": 1}')
  end
  return wrk.format("GET", "/p/" .. cart)
end
function response(status, headers, body) if status ~= 200 then non200 = non200 + 1 end end
function done(summary, latency, requests)
  local a = 0
  for _, t in ipairs(threads) do a = a + t:get("non200") end
  io.write(string.format("LUA not 200: %d\n", a))
end
LUA
  cp "$WORK/write.lua" "$WORK/write_post.lua"
  sed -i '1a wrk.method = "POST"' "$WORK/write_post.lua"
  # WRITE_SIDES: which rows (default both; "read" for a peer without write routes)
  local r cpus0=() cpus1=() sides=${WRITE_SIDES:-read write}
  for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
    if [[ $sides == *read* ]]; then
      DS_PORT=$GRPC_PORT bench "read 3 calls r$r" "$WORK/read.json" "${WRITE_CONNS:-16}" /p/x -s "$WORK/write.lua"; cpus0+=("$ROW_CPU_US")
    fi
    if [[ $sides == *write* ]]; then
      DS_PORT=$GRPC_PORT bench "write+2 reads r$r" "$WORK/write.json" "${WRITE_CONNS:-16}" /carts/x/items -s "$WORK/write_post.lua"; cpus1+=("$ROW_CPU_US")
    fi
  done
  ((${#cpus0[@]} && ${#cpus1[@]})) &&
    compare_medians read write "${cpus0[*]}" "${cpus1[*]}" "goal <= x1.0: the write path costs no more than a read"
  return 0
}

# Cost curves (bench/curves.sh runs them side by side with the peers). Each point is a row named
# "C<curve> <x>": CPU per request against the sections per request (instant downstream, 16
# connections), against the downstream body's size (one section, 16 connections), the memory
# under requests in flight (curve_inflight), and the memory of idle keep-alive connections (a row
# of its own format: RSS before and after).
curve_sections() {
  local n
  for n in ${CURVE_SECTIONS:-1 4 16 64}; do
    gen_config "$WORK/cs$n.json" 4096 \
      "{\"path\": \"/p/{id}\", \"deadline_ms\": 2000, \"sections\": $(sections_json "$n" /instant 1000)}"
    bench "CS $n" "$WORK/cs$n.json" 16 /p/1
  done
}

curve_body() {
  local size
  for size in ${CURVE_BODIES:-200 10k 100k 1m}; do
    gen_config "$WORK/cb$size.json" 1024 \
      "{\"path\": \"/p/{id}\", \"deadline_ms\": 2000, \"sections\": $(sections_json 1 "/body_$size.json" 1000)}"
    bench "CB $size" "$WORK/cb$size.json" 16 /p/1
  done
}

# curve_inflight: memory against requests in flight: S3's route (a 20 ms required section and an
# optional one that hangs until its 1 s timeout) under N connections (500, 1,000, 2,000: each
# holds one request in flight about a second); the row's RSS under load is the point. Beyond
# ~2,000 this machine's limits answer, not the gateways (a hard limit of 20,000 open files, three
# per request in flight; tcp_max_syn_backlog 2048 against wrk's storm of connects: at 3,000 no
# side got one answer in a 4 s round).
curve_inflight() {
  local n
  ulimit -n 65536 2>/dev/null || true
  write_lua
  for n in ${CURVE_INFLIGHT:-500 1000 2000}; do
    gen_config "$WORK/cf$n.json" $((n + 100)) "{\"path\": \"/p/{id}\", \"deadline_ms\": 1500, \"sections\": $S3_SECTIONS}"
    bench "CF $n" "$WORK/cf$n.json" "$n" /p/1 -s "$S2_LUA"
  done
}

# curve_idle: N keep-alive connections, each after one answered request, held open; the RSS of
# the server's process tree before and after (KiB), and per connection.
curve_idle() {
  local n before after
  ulimit -n 65536 2>/dev/null || true
  gen_config "$WORK/ci.json" 1024 \
    "{\"path\": \"/p/{id}\", \"deadline_ms\": 1000, \"sections\": $(sections_json 1 /instant 500)}"
  for n in ${CURVE_IDLE:-1000 10000}; do
    start_gateway "$WORK/ci.json"
    curl -sf -o /dev/null "http://127.0.0.1:$GW_PORT/p/[1-200]" || true # warm-up
    sleep 0.3
    before=$(rss_kib "$GW_PID")
    python3 - "$GW_PORT" "$n" > "$WORK/idle.out" <<'PY2' &
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks, ok = [], 0
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /p/1 HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        body += s.recv(65536)
    ok += head.startswith(b"HTTP/1.1 200")
    socks.append(s)
print("open", ok, flush=True)
time.sleep(3600)
PY2
    local holder=$!
    for _ in $(seq 600); do grep -q '^open' "$WORK/idle.out" && break; sleep 0.2; done
    sleep 1
    after=$(rss_kib "$GW_PID")
    echo "CI $n idle connections: rss_KiB $before -> $after, $(awk -v a="$after" -v b="$before" -v n="$n" 'BEGIN {printf "%.2f", (a - b) / n}') KiB per connection, $(cat "$WORK/idle.out") answered 200, threads $(threads_of "$GW_PID"), load $(cut -d' ' -f1 /proc/loadavg)"
    kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true
    stop_gateway
  done
}

cluster() {
  local secs='[{"name": "a", "url": "@D@/big.json", "timeout_ms": 2000, "required": true, "fields": ["id", "summary.count"]},
               {"name": "b", "url": "@D@/big.json", "timeout_ms": 2000, "fallback": {}, "fields": ["summary"]}]'
  local route="{\"path\": \"/p/{id}\", \"deadline_ms\": 3000, \"sections\": $secs}"
  for nodes in ${CLUSTER_NODES:-0 1 2}; do
    NODE_PIDS=()
    local list=()
    for ((k = 0; k < nodes; k++)); do
      local port=$((NPORT + 10 + k))
      "$BIN" node --listen "127.0.0.1:$port" --allow-any >/dev/null 2>&1 &
      NODE_PIDS+=($!); list+=("\"127.0.0.1:$port\"")
    done
    sleep 1
    gen_config "$WORK/cl$nodes.json" 1024 "$route"
    if ((nodes > 0)); then
      python3 - "$WORK/cl$nodes.json" "[$(IFS=,; echo "${list[*]}")]" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1])); cfg["cluster"] = {"nodes": json.loads(sys.argv[2]), "local": False}
json.dump(cfg, open(sys.argv[1], "w"), indent=1)
PY
    fi
    write_lua
    bench "cluster ${nodes} nodes" "$WORK/cl$nodes.json" 16 /p/1 -s "$S2_LUA"
    for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    NODE_PIDS=()
  done
  echo "    (us_cpu/req for the cluster rows sums the gateway and its nodes)"
}

# Progressive answers: S2's shape (three 20 ms sections, s0 required, and a hung optional one with
# timeout 120; deadline 400), each answer read whole and as NDJSON by bench/stream_probe over raw
# keep-alive sockets (STREAM_CONNS callers, closed loop): time to the first byte, to s0's data, to
# the end. Build the probe first: cmake --build build --target stream_probe.
stream() {
  local probe=${STREAM_PROBE:-$(dirname "$BIN")/bench/stream_probe} conns=${STREAM_CONNS:-16}
  local secs
  secs=$(sections_json 3 /d20 500 | python3 -c 'import json, sys
s = json.load(sys.stdin); s[0]["name"] = "base"
s.append({"name": "reviews", "url": "@D@/hang", "timeout_ms": 120, "fallback": {"score": 0}})
print(json.dumps(s))')
  gen_config "$WORK/stream.json" 1024 "{\"path\": \"/p/{id}\", \"deadline_ms\": 400, \"sections\": $secs}"
  start_gateway "$WORK/stream.json"
  "$probe" 127.0.0.1 "$GW_PORT" /p/1 application/json 4 2 >/dev/null # warm-up
  for accept in application/json application/x-ndjson; do
    local before after
    before=$(cpu_ticks "$GW_PID")
    "$probe" 127.0.0.1 "$GW_PORT" /p/1 "$accept" "$conns" "$DURATION" | tee "$WORK/probe.out"
    after=$(cpu_ticks "$GW_PID")
    local n
    n=$(sed -n 's/^[^:]*: \([0-9]*\) answers.*/\1/p' "$WORK/probe.out")
    echo "    gateway CPU $(( (after - before) * 1000000 / TICKS / (n > 0 ? n : 1) )) us/answer, load $(cut -d' ' -f1 /proc/loadavg)"
  done
  stop_gateway
}

echo "gather bench: $BIN, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), wrk -t$WRK_THREADS ${DURATION}s, $(date -u +%FT%TZ)"
start_nginx
if [[ -n ${SPANS:-} ]]; then
  exec {sink_out}< <("$ROOT/bench/span_split.py" sink "$WORK/spans")
  SINK_PID=$!
  read -r SPANS_PORT <&"$sink_out"
  export SPANS SPANS_PORT
fi
print_header
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(s0 s1 s2 s3 s4 tail_drill guards linear cluster)
for s in "${scenarios[@]}"; do "$s"; done
