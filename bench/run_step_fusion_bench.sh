#!/usr/bin/env bash
# The 784-256-10 batch-64 Adam step with the step's fusions (fuse-matmul-epilogue,
# merge-optimizer-outputs: 14 dispatches) and without them (25), in one job on one GPU, each with
# and without per-dispatch GPU timestamps. Expects `dist/` binaries. Writes JSON lines to
# $OUT/step_fusion.jsonl.
set -uo pipefail
OUT=${OUT:-out}
B=${SCELLIS_BENCH:-dist/scellis_bench_mlp}
mkdir -p "$OUT"
R="$OUT/step_fusion.jsonl"
: > "$R"
for disabled in "" "fuse-matmul-epilogue,merge-optimizer-outputs"; do
  for timing in "" "--gpu-timestamps"; do
    echo "{\"disabled_passes\": \"$disabled\", \"timing\": \"$timing\"}" | tee -a "$R"
    SCELLIS_BENCH_DISABLE_PASSES="$disabled" "$B" examples/fashion_mlp.json webgpu 1024 $timing | tee -a "$R"
  done
done
