#!/usr/bin/env bash
# The yardstick of user-space work (docs/performance.md, "Instructions per request"): callgrind's
# instruction count (Ir) per request for S0 (one section), S1 (four), S2's shape (four and one
# that hangs past its 50 ms timeout) and the seed's book page (GetBook and SearchBooks over gRPC,
# stock over HTTP), each split by stage and by library (bench/callgrind_split.py). Instructions,
# not time: the same build gives the same figures whatever else the machine does (within ~1%).
#
#   bench/callgrind_table.sh [N]   (default 200 requests per scenario, after 50 warm-up ones)
#
# Needs valgrind, curl, binutils (nm) and build/bench/grpc_downstream (cmake --build build
# --target grpc_downstream); GATHER_BIN as bench/run.sh; BUILD_DIR (default: the binary's folder)
# holds the libgather_*.a whose symbols say each function's stage.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${GATHER_BIN:-$ROOT/build/gather}
BUILD_DIR=${BUILD_DIR:-$(dirname "$BIN")}
N=${1:-200}
OUT=$(mktemp -d /tmp/gather-callgrind.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
run() { # NAME SECTIONS [VAR=VALUE...]
  local name=$1 sections=$2
  shift 2
  env "$@" GATHER_BIN="$BIN" "$ROOT/bench/callgrind.sh" "$sections" "$N" "$OUT/$name" > /dev/null
  python3 "$ROOT/bench/callgrind_split.py" "$OUT/$name.1" "$N" "$BUILD_DIR" --json > "$OUT/$name.json"
}
run S0 1
run S1 4
run S2 4 HANG=1
run book 0 BOOK=1
python3 - "$OUT" "$N" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" <<'PY'
import json, os, sys
out, n, commit = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [(name, json.load(open(os.path.join(out, name + ".json")))) for name in ("S0", "S1", "S2", "book")]
print("instructions per request (callgrind Ir, %s requests after 50 warm-up, commit %s)" % (n, commit))
for split in ("by_stage", "by_library"):
    keys = []
    for _, r in rows:
        for k, v in r[split].items():
            if k not in keys and v / r["instructions_per_request"] >= 0.005:
                keys.append(k)
    print()
    print("%-28s" % split.replace("_", " ") + "".join("%10s" % name for name, _ in rows))
    print("%-28s" % "total" + "".join("%10.0f" % r["instructions_per_request"] for _, r in rows))
    for k in keys:
        print("%-28s" % k + "".join("%10.0f" % r[split].get(k, 0) for _, r in rows))
PY
