#!/usr/bin/env bash
# Bandwidth-bound kernels on the GPU: Scellis (scellis_bench_elementwise, through a prepared
# session on WebGPU; copy and the fused chain with the vec4 kernel and with the scalar one, and the
# fixed-order sum, whole-tensor and along the last axis of [16, n / 16]) beside PyTorch eager and torch.compile (bench/elementwise/peer.py), as one table.
# Expects dist/scellis_bench_elementwise; on the H200 run it through bench/device/h200.sh, which
# sets up the Vulkan loader and driver:
#   bash bench/device/h200.sh "bash bench/elementwise/run_h200.sh"
# Pass --quick for 2^20 elements (a software adapter manages those). Writes $OUT/elementwise/.
set -uo pipefail
DIR="${OUT:-out}/elementwise"
mkdir -p "$DIR"
BENCH=${SCELLIS_BENCH_ELEMENTWISE:-dist/scellis_bench_elementwise}
"$BENCH" --backend=webgpu "$@" | tee "$DIR/scellis.jsonl"
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  python3 bench/elementwise/peer.py "$@" | tee "$DIR/peer.jsonl"
else
  echo "no CUDA PyTorch here: the peer's columns stay empty" >&2
  : > "$DIR/peer.jsonl"
fi
python3 - "$DIR" <<'PY'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (d / "scellis.jsonl").read_text().splitlines() if l.strip()]
peer = {}
for l in (d / "peer.jsonl").read_text().splitlines():
    if l.strip():
        j = json.loads(l)
        peer[(j["case"], j["mode"])] = j
gb = lambda gbs: f"{gbs:.1f}"
print(f"{'case':11} {'scellis kernel':15} {'ms':>9} {'GB/s':>8} {'torch eager':>12} "
      f"{'torch.compile':>14} {'x.clone()':>10}  ok")
for r in rows:
    if "error" in r:
        print(f"{r['case']:11} refused: {r['error']}")
        continue
    fmt = lambda mode: gb(peer[(r["case"], mode)]["gb_per_s"]) if (r["case"], mode) in peer else "-"
    copy = peer.get((r["case"].replace(r["kind"], "copy"), "x.clone()"))
    print(f"{r['case']:11} {r['schedule']:15} {r['median_ms']:9.3f} {gb(r['gb_per_s']):>8} "
          f"{fmt('eager'):>12} {fmt('torch.compile'):>14} "
          f"{gb(copy['gb_per_s']) if copy else '-':>10}  {'yes' if r['correct'] else 'NO'}")
print(f"device: {rows[0]['device'] if rows else '?'}; GB/s from bytes moved (inputs read once, "
      f"output written once) over the median of {rows[0]['runs'] if rows else '?'} runs; "
      f"copy is y = -x for Scellis, x.clone() for torch")
PY
