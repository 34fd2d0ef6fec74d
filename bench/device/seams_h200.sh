#!/usr/bin/env bash
# What the engine's seams promise, measured on the GPU (run through bench/device/h200.sh):
# a 1000-generation Life on a 1024x1024 grid reads back one grid; 64 unrolled life steps compile
# one pipeline; a run's outputs come back in one submission and one map; a declared `exact`
# tolerance over `exp` is refused on the GPU and runs on the reference; the MLP step beside
# PyTorch's CUDA graph in the same job.
set -uo pipefail
S=${SCELLIS:-dist/scellis}
T=$(mktemp -d)
python3 bench/life_doc.py 1024 1 7 > "$T/life1.json"
python3 bench/life_doc.py 1024 64 7 > "$T/life64.json"
for steps in 1 1000; do
  echo "## life 1024x1024, one generation per step, --steps $steps"
  "$S" run "$T/life1.json" --tier=prod --steps $steps --json | python3 bench/device/run_summary.py
done
echo "## life 1024x1024 with 64 unrolled generations, --steps 1 and 16 (1024 generations)"
"$S" run "$T/life64.json" --tier=prod --json | python3 bench/device/run_summary.py
"$S" run "$T/life64.json" --tier=prod --steps 16 --json | python3 bench/device/run_summary.py
for f in examples/*.json; do
  grep -q '"train"' "$f" && continue
  echo "## $f"
  "$S" run "$f" --tier=prod --json | python3 bench/device/run_summary.py
done
echo "## exact over exp: refused on the GPU (exit 2), runs on the reference"
"$S" run tests/errors/exact_exp_on_webgpu.json --backend=webgpu; echo "exit $?"
"$S" run tests/errors/exact_exp_on_webgpu.json --backend=cpu 2>/dev/null; echo "exit $?"
echo "## MLP step (784-256-10, Adam, batch 64)"
"$S" train examples/fashion_mlp.json --epochs 1 --max-steps 8 --init-out "$T/init.safetensors" >/dev/null 2>&1
"${SCELLIS_BENCH:-dist/scellis_bench_mlp}" examples/fashion_mlp.json webgpu 2048
python3 bench/peer/torch_mlp.py --init "$T/init.safetensors" --device cuda --mode graph --steps 2048
python3 bench/peer/torch_mlp.py --init "$T/init.safetensors" --device cuda --mode eager --steps 2048
