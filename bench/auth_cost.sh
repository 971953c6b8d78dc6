#!/usr/bin/env bash
# What auth + a rate limit that never trips cost per request: bench/run.sh's scenarios with and
# without them, and a peer with the same token header beside them, in interleaved rounds (with,
# without, peer, with, ...); per scenario the medians and the ratio of each round's CPU per request.
#
#   bench/auth_cost.sh [ROUNDS [scenario...]]   (default 5 rounds of s0; DURATION and the rest as
#                                               bench/run.sh takes them)
# PEER_BIN: the peer (default the Node BFF at ../shared/peers/node-gateway; empty: none).
#
# The JWK set (one RSA-2048 key) and an RS256 token valid for a day are made here with openssl.
# Every request carries the token; the route checks it (iss, aud, require) and spends a token of a
# per-ip bucket of 10^6/s (never empty).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/key.pem" 2>/dev/null
TOKEN=$(python3 - "$WORK" <<'PY'
import base64, json, subprocess, sys, time
work = sys.argv[1]
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
modulus = subprocess.run(["openssl", "rsa", "-in", work + "/key.pem", "-noout", "-modulus"],
                         capture_output=True, text=True, check=True).stdout.strip().split("=")[1]
json.dump({"keys": [{"kty": "RSA", "kid": "bench", "n": b64(bytes.fromhex(modulus)), "e": "AQAB"}]},
          open(work + "/jwks.json", "w"))
now = int(time.time())
head = b64(json.dumps({"alg": "RS256", "kid": "bench", "typ": "JWT"}).encode())
body = b64(json.dumps({"sub": "bench", "iss": "https://id.bench/", "aud": "gather", "scope": "read",
                       "iat": now, "exp": now + 86400}).encode())
signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", work + "/key.pem"],
                           input=(head + "." + body).encode(), capture_output=True, check=True).stdout
print(head + "." + body + "." + b64(signature))
PY
)
ROUTE="{\"auth\": {\"jwt\": {\"jwks_file\": \"$WORK/jwks.json\", \"issuer\": \"https://id.bench/\",
  \"audience\": \"gather\", \"require\": {\"scope\": \"read\"}}},
  \"rate_limit\": {\"per\": \"ip\", \"rate_per_s\": 1000000, \"burst\": 1000000}}"
ROWS=$WORK/rows
shift || true
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(s0)
PEER=${PEER_BIN-$ROOT/../shared/peers/node-gateway}
sides=(with without)
[[ -n $PEER ]] && sides+=(peer)
for ((r = 1; r <= ROUNDS; r++)); do
  for who in "${sides[@]}"; do
    case $who in
      with) out=$(GATHER_ROUTE=$ROUTE WRK_HEADER="Authorization: Bearer $TOKEN" "$ROOT/bench/run.sh" "${scenarios[@]}") ;;
      without) out=$(WRK_HEADER="Authorization: Bearer $TOKEN" "$ROOT/bench/run.sh" "${scenarios[@]}") ;;
      peer) out=$(GATHER_BIN=$PEER WRK_HEADER="Authorization: Bearer $TOKEN" "$ROOT/bench/run.sh" "${scenarios[@]}") ;;
    esac
    # The row's figures from its end: ... us/req ms/kreq load.
    grep '^S[0-9] ' <<<"$out" | while read -r row; do
      echo "round $r $who: $row"
      awk -v r="$r" -v who="$who" '{print r, who, $1, $(NF-8), $(NF-6), $(NF-2), $NF}' <<<"$row" >> "$ROWS"
    done
  done
done
python3 - "$ROWS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, who, scen, rps, non200, cpu, load = line.split()
    runs.setdefault(scen, {}).setdefault(r, {})[who] = (float(rps), int(non200), float(cpu), float(load))
for scen, rounds in sorted(runs.items()):
    print("== %s, load1 at each row: %s" % (scen, " ".join("%.1f" % v[3] for r in rounds.values() for v in r.values())))
    for who in ("with", "without", "peer"):
        cpu = [r[who][2] for r in rounds.values() if who in r]
        if cpu:
            print("  us CPU/req %-8s %s  median %.1f  non-200 %d" % (who, cpu, statistics.median(cpu),
                  sum(r[who][1] for r in rounds.values() if who in r)))
    pairs = [r["with"][2] / r["without"][2] for r in rounds.values() if "with" in r and "without" in r]
    print("  paired ratios with/without:", ["%.3f" % x for x in pairs], " median %.3f" % statistics.median(pairs))
    for who in ("with", "without"):
        vs = [r[who][2] / r["peer"][2] for r in rounds.values() if who in r and "peer" in r]
        if vs:
            print("  %s / peer: median %.3f" % (who, statistics.median(vs)))
PY
