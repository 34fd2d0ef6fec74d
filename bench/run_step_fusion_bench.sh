#!/usr/bin/env bash
# The 784-256-10 batch-64 Adam step with all the step's fusions (fuse-matmul-epilogue,
# merge-optimizer-outputs, merge-loss-gradient, merge-bias-gradient, fold-constant-inputs,
# write-state-in-place, merge-optimizer-kernels, fuse-optimizer-into-gradient,
# fuse-gradient-product-into-loss: 5 dispatches), without the last (6), without the last two (8),
# without the last four (10), without the last seven (14) and without any (25), in one job on one GPU,
# each with and without per-dispatch GPU timestamps. Expects `dist/` binaries. Writes JSON lines
# to $OUT/step_fusion.jsonl.
set -uo pipefail
OUT=${OUT:-out}
B=${SCELLIS_BENCH:-dist/scellis_bench_mlp}
mkdir -p "$OUT"
R="$OUT/step_fusion.jsonl"
: > "$R"
IN_LOSS="fuse-gradient-product-into-loss"
IN_MATMUL="$IN_LOSS,fuse-optimizer-into-gradient"
STATE_MERGES="write-state-in-place,merge-optimizer-kernels,$IN_MATMUL"
STEP_MERGES="merge-loss-gradient,merge-bias-gradient,fold-constant-inputs,$STATE_MERGES"
for disabled in "" "$IN_LOSS" "$IN_MATMUL" "$STATE_MERGES" "$STEP_MERGES" \
    "fuse-matmul-epilogue,merge-optimizer-outputs,$STEP_MERGES"; do
  for timing in "" "--gpu-timestamps"; do
    echo "{\"disabled_passes\": \"$disabled\", \"timing\": \"$timing\"}" | tee -a "$R"
    SCELLIS_BENCH_DISABLE_PASSES="$disabled" "$B" examples/fashion_mlp.json webgpu 1024 $timing | tee -a "$R"
  done
done
