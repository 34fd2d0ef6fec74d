#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# including float-cast-overflow, the whole library instrumented) in build-fuzz/ and runs each for
# SECONDS. A target `tools/fuzz/<name>_fuzz.cpp` starts from the corpus kept in the repository
# (tools/fuzz/seeds.sh: `tools/fuzz/corpus/<name>/`, the last campaign's `<name>.tar.xz`, and for the
# document loader examples/ and tests/errors/), and uses
# `tools/fuzz/<name>.dict` when there is one. New interesting inputs accumulate in
# build-fuzz/corpus/<name>/; a crash is written to build-fuzz/artifacts/<name>/ and makes the script
# fail.
#
# usage: tools/run_fuzz.sh SECONDS [NAME...]   (no NAME: every target, SECONDS each)
#   JOBS=N        parallel build jobs (2)
#   FUZZ_FORKS=N  libFuzzer worker processes per target (1); with N > 1 the run uses -fork=N
#   FUZZ_OPT=-O1  optimisation of the instrumented build. `make test`'s short runs pass -O0: the
#                 sanitized library then compiles in about half the time, and a 10 s run is a
#                 smoke test whose value is the corpus replay and the sanitizers, not executions
#                 per second. Each optimisation level builds in its own folder (build-fuzz for
#                 -O1, build-fuzz-O0 for -O0), so neither rebuilds the other.
#   FUZZ_BUILD_ONLY=1  build the targets and stop (make test builds them beside its other suites)
#   FUZZ_NO_BUILD=1    run the targets as they are built (make test runs two of these side by side
#                      once its build is done, so neither rebuilds under the other)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:?usage: tools/run_fuzz.sh SECONDS [NAME...]}"
shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for src in tools/fuzz/*_fuzz.cpp; do
    base="$(basename "$src" .cpp)"
    names+=("${base%_fuzz}")
  done
fi

jobs="${JOBS:-2}"
forks="${FUZZ_FORKS:-1}"
opt="${FUZZ_OPT:--O1}"
fuzz_build=build-fuzz
[ "$opt" = -O1 ] || fuzz_build="build-fuzz$opt"
if [ ! -f "$fuzz_build/build.ninja" ]; then
  # Line tables only: what fuzzing needs (symbolised stacks with file and line), compiled about a
  # quarter faster than full debug information.
  CXX=clang++ cmake -S . -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DSCELLIS_FUZZ=ON -DSCELLIS_TESTS=OFF \
    -DCMAKE_CXX_FLAGS="$opt -gline-tables-only -DNDEBUG -fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=undefined,float-cast-overflow" >/dev/null
fi
targets=()
for name in "${names[@]}"; do targets+=("${name}_fuzz"); done
[ "${FUZZ_NO_BUILD:-0}" = 1 ] || cmake --build "$fuzz_build" -j "$jobs" --target "${targets[@]}"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

status=0
for name in "${names[@]}"; do
  corpus="$fuzz_build/corpus/$name"
  seeds="$fuzz_build/seeds/$name"
  artifacts="$fuzz_build/artifacts/$name"
  mkdir -p "$corpus" "$seeds" "$artifacts"
  bash tools/fuzz/seeds.sh "$name" "$seeds"
  dict=()
  if [ -f "tools/fuzz/$name.dict" ]; then dict=(-dict="tools/fuzz/$name.dict"); fi
  fork=()
  if [ "$forks" -gt 1 ]; then fork=(-fork="$forks" -ignore_crashes=0); fi
  echo "== fuzzing $name for $seconds s"
  log="$fuzz_build/$name.log"
  # libFuzzer reports every new input; the log keeps that, the console gets the summary.
  "$fuzz_build/${name}_fuzz" "$corpus" "$seeds" "${dict[@]}" "${fork[@]}" \
    -max_total_time="$seconds" -max_len=8192 -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log"
    echo "fuzzing $name found a failure (log: $log, input: $artifacts/)"
    exit "$status"
  fi
  grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$log" || tail -n 3 "$log"
done
