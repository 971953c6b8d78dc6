#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on its corpus: fuzz/run.sh TARGET SECONDS [libFuzzer args]
# TARGET: config | url | answer | batch_body | request | h2 | h2_client | response | url_split |
# jwt | rate_key | grpc | proxy | write_body. Builds build-fuzz
# with clang if needed. New inputs go to build-fuzz/corpus/TARGET (the checked-in seeds in fuzz/corpus/TARGET are only read); crashes
# go to build-fuzz/artifacts/TARGET/. Exits non-zero when the fuzzer found a crash.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 config|url|answer|batch_body|request|h2|h2_client|response|url_split|jwt|rate_key|grpc|proxy|write_body SECONDS [libFuzzer args...]" >&2
  exit 64
fi
target=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GATHER_FUZZ_BUILD:-$root/build-fuzz}
if [[ ! -x $build/fuzz/fuzz_$target ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGATHER_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$build" -j2 --target "fuzz_$target" >/dev/null
mkdir -p "$build/corpus/$target" "$build/artifacts/$target"
# max_len: config files and bodies are small; 16 KiB still nests far past the 512 limit.
exec "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target/" "$@" \
  "$build/corpus/$target" "$root/fuzz/corpus/$target"
