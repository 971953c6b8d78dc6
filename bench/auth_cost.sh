#!/usr/bin/env bash
# What auth + a rate limit that never trips cost per request: S0 (bench/run.sh) with and without
# them, in paired rounds (with, without, with, ...), and the ratio of each pair's CPU per request.
#
#   bench/auth_cost.sh [ROUNDS]     (default 5; DURATION and the rest as bench/run.sh takes them)
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
for ((r = 1; r <= ROUNDS; r++)); do
  for who in with without; do
    if [[ $who == with ]]; then
      out=$(GATHER_ROUTE=$ROUTE WRK_HEADER="Authorization: Bearer $TOKEN" "$ROOT/bench/run.sh" s0)
    else
      out=$(WRK_HEADER="Authorization: Bearer $TOKEN" "$ROOT/bench/run.sh" s0)
    fi
    row=$(grep '^S0 ' <<<"$out")
    echo "round $r $who: $row"
    # The row's figures from its end: ... us/req ms/kreq load.
    awk -v r="$r" -v who="$who" '{print r, who, $(NF-8), $(NF-6), $(NF-2)}' <<<"$row" >> "$ROWS"
  done
done
python3 - "$ROWS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, who, rps, non200, cpu = line.split()
    runs.setdefault(r, {})[who] = (float(rps), int(non200), float(cpu))
ratios = [v["with"][2] / v["without"][2] for v in runs.values() if "with" in v and "without" in v]
print("us CPU/req with:    ", [v["with"][2] for v in runs.values()])
print("us CPU/req without: ", [v["without"][2] for v in runs.values()])
print("non-200 with:       ", [v["with"][1] for v in runs.values()])
print("paired ratios with/without:", ["%.3f" % x for x in ratios], " median %.3f" % statistics.median(ratios))
PY
