#!/usr/bin/env bash
# Seed 002's workloads on the GPU: Scellis (scellis_bench_pipeline, fused in one submission per
# run) checked against the float64 oracle, then PyTorch eager / CUDA graph / torch.compile on the
# same starting state (bench/pipelines/peer.py), and the end-to-end CLI run under each executor.
# Expects dist/scellis and dist/scellis_bench_pipeline; writes to $OUT/pipelines.
set -uo pipefail
DIR="${OUT:-out}/pipelines"
mkdir -p "$DIR"
names=(jacobi heat life gray_scott sobel ising tree_sum wavefront spectral canny bitonic_sort top_k
       compaction path_tracer)
# Workloads named on the command line run alone (bash bench/pipelines/run_h200.sh path_tracer).
if (($#)); then names=("$@"); fi
for n in "${names[@]}"; do
  mkdir -p "$DIR/$n"
  dist/scellis_bench_pipeline "examples/pipelines/$n.json" webgpu 10 "$DIR/$n" \
    > "$DIR/$n/scellis.json" || echo "scellis_bench_pipeline $n failed"
  # The same workload with one dispatch per iteration, to show what temporal blocking gives; for
  # the sorts, one dispatch per stage, to show what butterfly blocking gives.
  unblock=block-temporally
  if [[ $n == bitonic_sort || $n == top_k || $n == compaction ]]; then
    unblock=block-butterfly-stages
  fi
  mkdir -p "$DIR/$n/unblocked"
  dist/scellis_bench_pipeline "examples/pipelines/$n.json" webgpu 10 "$DIR/$n/unblocked" \
    --disable-pass=$unblock > "$DIR/$n/unblocked/scellis.json" \
    || echo "scellis_bench_pipeline $n (unblocked) failed"
  # Where the loop has invariants, with them recomputed in every iteration: what hoisting gives.
  if [[ $n == spectral || $n == canny ]]; then
    mkdir -p "$DIR/$n/unhoisted"
    dist/scellis_bench_pipeline "examples/pipelines/$n.json" webgpu 10 "$DIR/$n/unhoisted" \
      --disable-pass=hoist-loop-invariants > "$DIR/$n/unhoisted/scellis.json" \
      || echo "scellis_bench_pipeline $n (unhoisted) failed"
  fi
  for e in fused generic; do
    dist/scellis run "examples/pipelines/$n.json" --backend=webgpu --executor=$e --no-record --json \
      | python3 -c "import json,sys; j=json.load(sys.stdin); print(json.dumps({'workload':'$n','cli_executor':j['executor'],'fallback_reason':j['fallback_reason'],'stats':j['stats']}))"
  done
done | tee "$DIR/cli.jsonl"
python3 bench/pipelines/peer.py "$DIR" "${names[@]}" | tee "$DIR/peer.jsonl"
rm -f "$DIR"/*/*.f32 "$DIR"/*/unblocked/*.f32 "$DIR"/*/unhoisted/*.f32
