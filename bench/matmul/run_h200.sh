#!/usr/bin/env bash
# fp32 matmul on the GPU: Scellis (scellis_bench_matmul, through a prepared session on WebGPU)
# beside torch.matmul with TF32 off and on (bench/matmul/peer.py), as one table. Expects
# dist/scellis_bench_matmul; on the H200 run it through bench/device/h200.sh, which sets up the
# Vulkan loader and driver:
#   bash bench/device/h200.sh "bash bench/matmul/run_h200.sh"
# Pass --quick for the small shapes (a software adapter manages those), --schedule=... to sweep
# schedules and --gpu-timestamps for the kernel's GPU time (scellis_bench_matmul's flags, not
# passed to peer.py). Writes $OUT/matmul/.
set -uo pipefail
DIR="${OUT:-out}/matmul"
mkdir -p "$DIR"
BENCH=${SCELLIS_BENCH_MATMUL:-dist/scellis_bench_matmul}
"$BENCH" --backend=webgpu "$@" | tee "$DIR/scellis.jsonl"
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  python3 bench/matmul/peer.py $(printf '%s\n' "$@" | grep -v -e "--schedule=" -e "--gpu-timestamps") | tee "$DIR/peer.jsonl"
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
        peer[(j["shape"], j["mode"])] = j
print(f"{'shape':16} {'forced':22} {'schedule':22} {'scellis ms':>11} {'TFLOP/s':>8} {'torch TF32 off':>15} "
      f"{'torch TF32 on':>14}  ok")
for r in rows:
    off = peer.get((r["shape"], "fp32, TF32 off"))
    on = peer.get((r["shape"], "fp32, TF32 on"))
    fmt = lambda p: f"{p['tflops']:.1f}" if p else "-"
    print(f"{r['shape']:16} {r.get('forced', 'auto'):22} {r['schedule']:22} {r['median_ms']:11.3f} {r['tflops']:8.2f} "
          f"{fmt(off):>15} {fmt(on):>14}  {'yes' if r['correct'] else 'NO'}")
print(f"device: {rows[0]['device'] if rows else '?'}; TFLOP/s from the median of "
      f"{rows[0]['runs'] if rows else '?'} runs; torch columns in TFLOP/s")
PY
