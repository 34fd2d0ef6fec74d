#!/usr/bin/env bash
# Runs the documents of bench/tiling/over_cap_doc.py — tensors over the H200's 4 GiB storage-binding
# cap — on the GPU in debug and on the CPU reference, prints the plan's tiling (`tiled-binding`)
# and checks the outputs: matmuls and sums bit for bit, the softmax row sums within 1e-5 (the GPU's
# exp is not the reference's). Run inside bench/device/h200.sh (which sets up the Vulkan driver), e.g.
#   bash bench/device/h200.sh "bash bench/tiling/h200_over_cap.sh"
# usage: bench/tiling/h200_over_cap.sh [SCELLIS_BINARY] [SCALE]   (SCALE > 1: smaller documents;
#        RUN_FLAGS=--allow-software-adapter tries it on SwiftShader, where nothing is over the cap)
set -uo pipefail
S=${1:-dist/scellis}
scale=${2:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export SCELLIS_NO_RECORD=1
status=0
for c in matmul_k matmul_n sum sum_axis softmax; do
  echo "### $c"
  python3 "$(dirname "$0")/over_cap_doc.py" "$c" "$scale" >"$dir/$c.json"
  "$S" plan "$dir/$c.json" --tier=debug | grep -E "verdict|tiled-binding|binding-cap"
  /usr/bin/time -f "gpu wall %e s" "$S" run "$dir/$c.json" --tier=debug --backend=webgpu ${RUN_FLAGS:-} \
    --out "$dir/$c.gpu.json" >/dev/null || status=1
  /usr/bin/time -f "cpu wall %e s" "$S" run "$dir/$c.json" --tier=debug --backend=cpu \
    --out "$dir/$c.cpu.json" >/dev/null || status=1
  python3 - "$dir/$c.gpu.json" "$dir/$c.cpu.json" "$c" <<'PY' || status=1
import json, sys
gpu, cpu = (json.load(open(p))["outputs"]["y"]["data"] for p in sys.argv[1:3])
flat = lambda v: [x for r in v for x in flat(r)] if isinstance(v, list) else [v]
gpu, cpu = flat(gpu), flat(cpu)
diff = [abs(a - b) for a, b in zip(gpu, cpu)]
same = sum(a == b for a, b in zip(gpu, cpu))
print(f"{sys.argv[3]}: {len(gpu)} outputs, {same} bit-identical, max |gpu - cpu| {max(diff):.3g}")
ok = len(gpu) == len(cpu) and (max(diff) <= 1e-5 if sys.argv[3] == "softmax" else same == len(gpu))
sys.exit(0 if ok else 1)
PY
done
exit $status
