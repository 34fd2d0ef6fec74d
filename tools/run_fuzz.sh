#!/usr/bin/env bash
# Builds the document fuzzer with clang (libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# including float-cast-overflow, the whole library instrumented) in build-fuzz/ and runs it for
# SECONDS over a corpus seeded from examples/ and tests/errors/. New interesting inputs accumulate in build-fuzz/corpus/; a crash is written to
# build-fuzz/artifacts/ and makes the script fail.
#
# usage: tools/run_fuzz.sh SECONDS [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:?usage: tools/run_fuzz.sh SECONDS}"
shift

jobs="${JOBS:-2}"
if [ ! -f build-fuzz/build.ninja ]; then
  CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSCELLIS_FUZZ=ON -DSCELLIS_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=undefined,float-cast-overflow" >/dev/null
fi
cmake --build build-fuzz -j "$jobs" --target document_fuzz

mkdir -p build-fuzz/corpus build-fuzz/seeds build-fuzz/artifacts
cp examples/*.json tests/errors/*.json build-fuzz/seeds/

# libFuzzer reports every new input; the log keeps that, the console gets the summary.
status=0
build-fuzz/document_fuzz build-fuzz/corpus build-fuzz/seeds \
  -dict=tools/fuzz/document.dict -max_total_time="$seconds" -max_len=8192 -timeout=20 \
  -rss_limit_mb=4096 -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1 "$@" \
  > build-fuzz/fuzz.log 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 60 build-fuzz/fuzz.log
  echo "fuzzing found a failure (log: build-fuzz/fuzz.log, input: build-fuzz/artifacts/)"
  exit "$status"
fi
grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/fuzz.log || tail -n 3 build-fuzz/fuzz.log
