#!/usr/bin/env bash
# Runs the documents of bench/tiling/over_cap_doc.py — tensors over the H200's 4 GiB storage-binding
# cap, their data made on the device by `uniform` — on the GPU in debug and on the CPU reference,
# prints the tiling the GPU run's plan chose (its `tiled-binding` findings) and checks each answer:
# sums bit for bit against the reference (debug gives the reference's order, and the generators
# give its bits); matmuls within 1e-4 of the largest output's magnitude (the same order, but the
# driver's compiler may contract a product and its addition into one fused multiply-add, as
# conformance on the H200 shows for untiled matmuls too), with the count of identical bits; cross
# entropy's loss within 1e-5 (relative) of the reference; the loss gradient's row sums within 1e-5
# of the reference and of 0 within 1e-3 (each row is softmax - onehot); softmax, whose GPU exp is not the reference's, within 1e-5 of the
# reference, and every row of probabilities summing to 1 within 1e-3 (float64 arithmetic on the
# printed sums). Exits 1 when any run fails or any check does not hold. Run inside
# bench/device/h200.sh (which sets up the Vulkan driver), e.g.
#   bash bench/device/h200.sh "bash bench/tiling/h200_over_cap.sh"
# usage: bench/tiling/h200_over_cap.sh [SCELLIS_BINARY] [SCALE] [CASE...]
#        SCALE > 1: smaller documents; RUN_FLAGS=--allow-software-adapter tries it on SwiftShader,
#        where nothing is over the cap at SCALE >= 8.
set -uo pipefail
S=${1:-dist/scellis}
scale=${2:-1}
shift $(($# < 2 ? $# : 2))
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(matmul_k matmul_n sum sum_axis softmax matmul_batch cumsum cross_entropy
  cross_entropy_grad)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export SCELLIS_NO_RECORD=1
status=0
for c in "${cases[@]}"; do
  echo "### $c (scale $scale)"
  python3 "$(dirname "$0")/over_cap_doc.py" "$c" "$scale" >"$dir/$c.json" || { status=1; continue; }
  for backend in webgpu cpu; do
    flags=()
    [ "$backend" = webgpu ] && flags=(${RUN_FLAGS:-})
    /usr/bin/time -f "$backend wall %e s" "$S" run "$dir/$c.json" --tier=debug \
      --backend=$backend "${flags[@]}" --out "$dir/$c.$backend.json" >/dev/null 2>"$dir/$c.$backend.err"
    rc=$?
    # The plan's findings (the tiles each over-cap kernel runs in), errors and the wall time.
    grep -E "tiled-binding|binding-cap|error|wall" "$dir/$c.$backend.err" | grep -v XDG_RUNTIME_DIR
    if [ $rc -ne 0 ]; then
      echo "$c: the $backend run failed (exit $rc)"
      status=1
    fi
  done
  python3 - "$dir/$c.webgpu.json" "$dir/$c.cpu.json" "$c" <<'PY' || status=1
import json, math, sys

def load(path):
    try:
        return json.load(open(path))["outputs"]["y"]["data"]
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"{sys.argv[3]}: no output from {path} ({e})")

flat = lambda v: [x for r in v for x in flat(r)] if isinstance(v, list) else [v]
gpu, cpu = (flat(load(p)) for p in sys.argv[1:3])
case = sys.argv[3]
if len(gpu) != len(cpu):
    sys.exit(f"{case}: {len(gpu)} GPU outputs, {len(cpu)} CPU outputs: FAIL")
diff = [abs(a - b) for a, b in zip(gpu, cpu)]
same = sum(a == b for a, b in zip(gpu, cpu))
line = f"{case}: {len(gpu)} outputs, {same} bit-identical to the reference, max |gpu - cpu| {max(diff):.3g}"
if case == "softmax":
    # Each output is the sum of one row of probabilities: 1 up to the f32 sum's rounding.
    off = max(abs(v - 1.0) for v in gpu)
    line += f", max |row sum - 1| {off:.3g}"
    ok = max(diff) <= 1e-5 and off <= 1e-3 and all(math.isfinite(v) for v in gpu)
elif case == "cross_entropy_grad":
    # Each output is the sum of one row of softmax - onehot: 0 up to the f32 sum's rounding.
    off = max(abs(v) for v in gpu)
    line += f", max |row sum| {off:.3g}"
    ok = max(diff) <= 1e-5 and off <= 1e-3 and all(math.isfinite(v) for v in gpu)
elif case == "cross_entropy":
    # One loss: the GPU's exp and log are not the reference's, so within 1e-5 (relative).
    ok = max(diff) <= 1e-5 * max(1.0, abs(cpu[0])) and all(math.isfinite(v) for v in gpu)
elif case.startswith("matmul"):
    scale = max(abs(v) for v in cpu)
    line += f", largest |output| {scale:.3g}"
    ok = max(diff) <= 1e-4 * scale and all(math.isfinite(v) for v in gpu)
else:
    ok = same == len(gpu)
print(line + (": ok" if ok else ": FAIL"))
sys.exit(0 if ok else 1)
PY
done
exit $status
