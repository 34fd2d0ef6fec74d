#!/usr/bin/env bash
# Every row of the speed goals in one run, each beside its peer measured in the same run, then one
# table with the goal each row is held to:
#   gpu: the 784-256-10 Adam step at 1, 8 and 64 steps per run against PyTorch eager, its CUDA
#        graph and torch.compile; fp32 matmul 1024^3, 4096^3, 8192^3 and 64x784x256 against
#        cuBLAS with TF32 off; the elementwise chain, the whole-tensor sum and the row sum over 2^26
#        and 2^28 floats against torch.compile, beside the device's copy (x.clone()).
#        Expects dist/ binaries and a python3 with CUDA PyTorch; on the H200 run it through
#        bench/device/h200.sh, which sets up the Vulkan loader and driver.
#   cpu: an epoch of the main job on the CPU reference against PyTorch CPU eager on the same
#        threads (bench/cpu_epoch.sh; THREADS, default 2, and REPS, default 3).
#
# usage: bash bench/speed.sh gpu|cpu        Writes $OUT/speed/ (OUT defaults to out).
set -uo pipefail
WHAT=${1:-gpu}
DIR="${OUT:-out}/speed"
mkdir -p "$DIR"

if [ "$WHAT" = cpu ]; then
  bash bench/cpu_epoch.sh "${SCELLIS:-build/scellis}" "${THREADS:-2}" "${REPS:-3}" |
    tee "$DIR/cpu_epoch.txt"
  exit 0
fi
[ "$WHAT" = gpu ] || { echo "usage: bash bench/speed.sh gpu|cpu" >&2; exit 2; }

S=${SCELLIS:-dist/scellis}
"${SCELLIS_BENCH:-dist/scellis_bench_mlp}" examples/fashion_mlp.json webgpu 8192 |
  tee "$DIR/step.jsonl"
# The peer starts from the engine's initial weights: without them its rows stay empty, and say why.
: > "$DIR/step_peer.jsonl"
if "$S" train examples/fashion_mlp.json --epochs 1 --max-steps 1 --backend=webgpu \
  --init-out "$DIR/init.safetensors" >/dev/null 2>"$DIR/init.err"; then
  for mode in eager graph compile; do
    timeout 600 python3 bench/peer/torch_mlp.py --init "$DIR/init.safetensors" --device cuda \
      --mode $mode --steps 2048 2>>"$DIR/step_peer.err" | tee -a "$DIR/step_peer.jsonl"
  done
else
  echo "speed: $S could not write the initial weights, so the PyTorch step rows stay empty:" >&2
  tail -n 3 "$DIR/init.err" >&2
fi
OUT="$DIR" bash bench/matmul/run_h200.sh --gpu-timestamps --shape=1024x1024x1024 --shape=4096x4096x4096 \
  --shape=8192x8192x8192 --shape=64x784x256 >/dev/null
OUT="$DIR" bash bench/elementwise/run_h200.sh >/dev/null

python3 - "$DIR" <<'PY'
import json, pathlib, sys

d = pathlib.Path(sys.argv[1])
def rows(path):
    p = d / path
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []

# The step as the trainer runs it on a GPU: two runs in flight, batches gathered on the device.
step = {r["steps_per_run"]: r["us_per_step"] for r in rows("step.jsonl")
        if r.get("runs_in_flight") == 2 and r.get("batches") == "device"}
peer = {r["mode"]: r["us_per_step"] for r in rows("step_peer.jsonl")}
graph = peer.get("graph")
print(f"{'row':40} {'Scellis':>12} {'peer':>26} {'goal':>24}  met")
for per_run in (1, 8, 64):
    us = step.get(per_run)
    goal = "<= 40 us, >= 4x graph" if per_run == 8 else ""
    met = "yes" if per_run == 8 and us and graph and us <= 40 and graph / us >= 4 else (
        "no" if per_run == 8 else "")
    print(f"{'MLP step, ' + str(per_run) + ' per run (us)':40} {us or float('nan'):12.1f} "
          f"{'graph %.1f, eager %.0f' % (graph or float('nan'), peer.get('eager', float('nan'))):>26} "
          f"{goal:>24}  {met}")
print(f"{'  torch.compile (us)':40} {'':>12} {peer.get('compile', float('nan')):26.1f}")
if not peer:
    err = (d / "init.err").read_text().strip().splitlines() if (d / "init.err").exists() else []
    why = ("the engine wrote no initial weights for it" + (": " + err[-1] if err else "")
           if not (d / "init.safetensors").exists() else "see step_peer.err")
    print("  no PyTorch step rows: " + why)

mm_peer = {(r["shape"], r["mode"]): r["tflops"] for r in rows("matmul/peer.jsonl")}
for r in rows("matmul/scellis.jsonl"):
    cublas = mm_peer.get((r["shape"], "fp32, TF32 off"), float("nan"))
    # Judged as the peer is timed: CUDA events around its matmuls are the GPU's span of a run.
    span = r.get("gpu_span_tflops", r["tflops"])
    goal, met = ("", "")
    if r["shape"] == "4096x4096x4096":
        goal, met = ">= 45 TFLOP/s", "yes" if span >= 45 else "no"
    print(f"{'matmul ' + r['shape'] + ' (TFLOP/s)':40} {span:12.2f} "
          f"{'cuBLAS TF32 off %.2f' % cublas:>26} {goal:>24}  {met}"
          + ("" if r["correct"] else "  WRONG") + f"  (wall {r['tflops']:.2f})")

ew_peer = {(r["case"], r["mode"]): r["gb_per_s"] for r in rows("elementwise/peer.jsonl")}
best = {}
for r in rows("elementwise/scellis.jsonl"):
    if r["kind"] == "copy":
        continue
    if r["case"] not in best or r["gb_per_s"] > best[r["case"]]["gb_per_s"]:
        best[r["case"]] = r
for case, r in best.items():
    compiled = ew_peer.get((case, "torch.compile"), float("nan"))
    size = case.split()[-1]
    clone = ew_peer.get(("copy " + size, "x.clone()"), float("nan"))
    met = "yes" if r["gb_per_s"] >= 3800 else "no"
    print(f"{case + ' (GB/s, ' + r['schedule'] + ')':40} {r['gb_per_s']:12.0f} "
          f"{'compile %.0f, clone %.0f' % (compiled, clone):>26} {'>= 3800 GB/s':>24}  {met}"
          + ("" if r["correct"] else "  WRONG"))
print("GPU rows: the step's wall time per step (8192 steps), the peers' from the same run; matmul "
      "by the GPU's span of each run (as CUDA events time cuBLAS; wall time beside it) and "
      "elementwise by wall time, medians of 10 runs after a second's warm-up on both sides, "
      "every result checked against float64 first.")
PY
