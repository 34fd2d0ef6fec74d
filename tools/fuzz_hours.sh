#!/usr/bin/env bash
# The long fuzz campaign: every fuzz target at once, each with FORKS libFuzzer workers sharing one corpus for SECONDS,
# from the corpus kept in the repository (tools/fuzz/seeds.sh). Used for the CPU-hours an issue asks for; CI
# keeps the short runs of tools/run_fuzz.sh. Expects the targets already built by run_fuzz.sh (in
# FUZZ_BUILD, default build-fuzz) — it only runs them, so it can run on a machine without clang.
#
# Findings do not stop the campaign: each is written under OUTDIR/artifacts/<name>/ and counted,
# and its worker starts again. At the end every target's corpus is minimised (-merge=1)
# into OUTDIR/corpus/<name>/, and OUTDIR/summary.txt gives, per target, the CPU seconds spent (user +
# system of all its workers), executions, corpus size and findings.
#
# usage: tools/fuzz_hours.sh SECONDS FORKS OUTDIR [NAME...]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:?usage: tools/fuzz_hours.sh SECONDS FORKS OUTDIR [NAME...]}"
forks="${2:?}"
out="${3:?}"
shift 3
build="${FUZZ_BUILD:-build-fuzz}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for src in tools/fuzz/*_fuzz.cpp; do
    base="$(basename "$src" .cpp)"
    names+=("${base%_fuzz}")
  done
fi
mkdir -p "$out"

# One worker: plain libFuzzer runs on the target's shared corpus until SECONDS have passed; a
# finding ends a run (its input is kept under artifacts/), and the worker starts again.
worker() {
  local name="$1" i="$2" work="$out/work/$1" deadline=$((SECONDS + seconds)) run=0
  local dict=()
  if [ -f "tools/fuzz/$name.dict" ]; then dict=(-dict="tools/fuzz/$name.dict"); fi
  while [ $((deadline - SECONDS)) -gt 5 ]; do
    run=$((run + 1))
    "$build/${name}_fuzz" "$work/corpus" "$work/seeds" "${dict[@]}" -seed=$((i * 1000 + run)) \
      -max_total_time=$((deadline - SECONDS)) -max_len=8192 -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$out/artifacts/$name/" -print_final_stats=1 \
      > "$out/logs/$name.$i.$run.log" 2>&1
  done
}

run_one() {
  local name="$1" work="$out/work/$1"
  mkdir -p "$work/corpus" "$work/seeds" "$out/artifacts/$name" "$out/logs"
  bash tools/fuzz/seeds.sh "$name" "$work/seeds"
  for i in $(seq 1 "$forks"); do worker "$name" "$i" & done
  wait
  # CPU time of this subshell's children: every worker's fuzzer runs.
  times > "$work/times"
}

for name in "${names[@]}"; do run_one "$name" & done
wait

cpu_seconds() {  # "0m1.5s 0m0.2s" -> 1.7
  python3 -c 'import re,sys
t=0.0
for m,s in re.findall(r"(\d+)m([\d.]+)s", sys.argv[1]): t+=int(m)*60+float(s)
print(f"{t:.0f}")' "$1"
}

{
  echo "fuzz campaign: ${seconds} s x ${forks} workers per target, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
  printf '%-16s %12s %14s %8s %9s\n' target cpu_seconds executions corpus findings
  for name in "${names[@]}"; do
    work="$out/work/$name"
    mkdir -p "$out/corpus/$name"
    "$build/${name}_fuzz" -merge=1 "$out/corpus/$name" "$work/corpus" "$work/seeds" \
      -max_len=8192 -timeout=20 -rss_limit_mb=4096 > "$out/$name.merge.log" 2>&1
    execs=$(cat "$out/logs/$name".*.log | sed -n 's/^stat::number_of_executed_units: *//p' |
      awk '{ n += $1 } END { print n + 0 }')
    printf '%-16s %12s %14s %8s %9s\n' "$name" "$(cpu_seconds "$(tail -n 1 "$work/times")")" "${execs:-?}" \
      "$(ls "$out/corpus/$name" | wc -l)" "$(ls "$out/artifacts/$name" | wc -l)"
  done
} > "$out/summary.txt"
cat "$out/summary.txt"
