#!/usr/bin/env bash
# The 784-256-10 batch-64 Adam step: Scellis at 1, 8 and 64 steps per submission against PyTorch
# eager, CUDA graph and torch.compile, in the same job on the same GPU; then the loss agreement
# over the first 100 steps and a full 10-epoch training run. Expects `dist/` binaries and a
# python3 with torch (the device image has one). Writes JSON lines to $OUT/mlp_bench.jsonl.
set -uo pipefail
OUT=${OUT:-out}
S=${SCELLIS:-dist/scellis}
B=${SCELLIS_BENCH:-dist/scellis_bench_mlp}
mkdir -p "$OUT"
R="$OUT/mlp_bench.jsonl"
: > "$R"
"$B" examples/fashion_mlp.json webgpu 2048 | tee -a "$R"
"$S" train examples/fashion_mlp.json --epochs 1 --max-steps 100 --steps-per-run 8 \
  --init-out "$OUT/init.safetensors" --losses-out "$OUT/scellis_losses.json" >/dev/null 2>&1
for mode in eager graph; do
  python3 bench/peer/torch_mlp.py --init "$OUT/init.safetensors" --device cuda --mode $mode --steps 2048 | tee -a "$R"
done
python3 bench/peer/torch_mlp.py --init "$OUT/init.safetensors" --device cuda --mode losses --steps 100 \
  --out "$OUT/torch_cuda_losses.json" >/dev/null
python3 - "$OUT" <<'PY' | tee -a "$R"
import json, sys
d = sys.argv[1]
a = json.load(open(f"{d}/scellis_losses.json")); b = json.load(open(f"{d}/torch_cuda_losses.json"))["losses"]
print(json.dumps({"agreement": "scellis webgpu vs torch cuda", "steps": len(a),
                  "max_rel": max(abs(x - y) / abs(y) for x, y in zip(a, b)), "first": [a[0], b[0]], "last": [a[-1], b[-1]]}))
PY
"$S" train examples/fashion_mlp.json --epochs 10 --steps-per-run 64 --json 2> "$OUT/train_log.txt" | tee "$OUT/train_h200.json"
timeout 300 python3 bench/peer/torch_mlp.py --init "$OUT/init.safetensors" --device cuda --mode compile --steps 2048 | tee -a "$R"
