#!/usr/bin/env bash
# Both sides on every core of this machine (docs/performance-history.md, "Both cores"): Gather with
# `io_threads` = cores against the OpenResty peer with `worker_processes` = cores, S0 and S1 offered
# enough connections to saturate, rounds interleaved by bench/compare.sh, medians.
#
#   bench/two_cores.sh                  (ROUNDS, DURATION, S0_CONNS, S1_CONNS, CORES as below)
#
# The peer pins `worker_processes 1`; a copy of it with CORES workers is made in a temporary
# directory (its compile.py changed by one line), so the peer itself is left as it is. wrk and the
# downstream nginx run on the same cores, alike for both sides: the side that spends less CPU per
# request leaves more of the machine to answering.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORES=${CORES:-$(nproc)}
PEER_DIR=${PEER_DIR:-$ROOT/../shared/peers/openresty}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
COPY=$TMP/openresty-$CORES # the side's label in the table: openresty-N/gather-openresty
mkdir "$COPY" && cp -r "$PEER_DIR"/. "$COPY/"
grep -q '^{user}worker_processes 1;$' "$COPY/compile.py" ||
  { echo "two_cores: $PEER_DIR/compile.py no longer pins worker_processes 1" >&2; exit 2; }
sed -i "s/^{user}worker_processes 1;\$/{user}worker_processes $CORES;/" "$COPY/compile.py"
GATHER_TOP="{\"io_threads\": $CORES}" S0_CONNS=${S0_CONNS:-64} S1_CONNS=${S1_CONNS:-512} \
  PEERS="$COPY/gather-openresty" "$ROOT/bench/compare.sh" s0 s1
