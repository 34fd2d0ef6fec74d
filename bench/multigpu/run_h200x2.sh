#!/usr/bin/env bash
# The two-GPU benchmark: the 784-4096-4096-10 MLP (Adam, batch 8192) trained by Scellis
#   (a) on ONE GPU, the step in one piece (and, for the cost of host staging alone, the
#       data-parallel step of two chunks on that one GPU: --chunks=2);
#   (b) data-parallel on TWO GPUs: `mpirun -np 2 scellis train ... --ranks=2`, each rank opening
#       its own adapter (the host-local rank modulo the adapter count; checked below);
#   (c) by PyTorch DDP (NCCL) on 1 and 2 GPUs, the same model, batch and fp32 without TF32
#       (ddp_peer.py).
# Reports steps/s and samples/s from the engine's --json output (epochs after the first, which
# pays for pipeline compilation), and where a data-parallel step's time goes (the trainer's
# step_seconds: weights copied on the device, gradient half, local sums, MPI all-gather, tree,
# update half).
#
# Runs from the repository root of a GPU host laid out as bench/device/h200.sh expects (dist/scellis,
# node_modules/ with Dawn, .gl/ with the Vulkan loader packages, .data/fashion-mnist). mpirun is
# the host's when it has one, else the OpenMPI copied into dist/mpi by tools/bundle_openmpi.sh.
#
# Environment (defaults for the H200 pair):
#   SCELLIS   the binary (dist/scellis, else build/scellis)
#   BACKEND   webgpu | cpu (cpu: a check of the whole script on the CPU reference)
#   MODEL     the workflow (bench/multigpu/mlp_4096.json; mlp_tiny.json for checks)
#   EPOCHS    epochs per run (3); STEPS   steps per epoch (7, a whole epoch at batch 8192)
#   PEER      torch | none (torch); PEER_ARGS  extra ddp_peer.py flags (checks: --device cpu ...)
#   SOFTWARE  1 to accept a software adapter (SwiftShader checks)
#   RESULTS   where results go (out/multigpu); on the lent GPU host pass RESULTS=$OUT/r and
#             tar it up afterwards (few files come back from there)
set -euo pipefail
cd "$(dirname "$0")/../.."
# NVLink multicast stays off on the GPU host for everything that may start NCCL.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BACKEND=${BACKEND:-webgpu}
MODEL=${MODEL:-bench/multigpu/mlp_4096.json}
EPOCHS=${EPOCHS:-3}
STEPS=${STEPS:-7}
PEER=${PEER:-torch}
OUT=${RESULTS:-out/multigpu}
mkdir -p "$OUT"
SCELLIS=${SCELLIS:-$( [ -x dist/scellis ] && echo dist/scellis || echo build/scellis )}
SCELLIS=$(cd "$(dirname "$SCELLIS")" && pwd)/$(basename "$SCELLIS")

if [ -d .gl ] && ls .gl/*.deb >/dev/null 2>&1 && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
NV_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$NV_ICD" ] && export VK_DRIVER_FILES=$NV_ICD
if [ -z "${SCELLIS_FASHION_MNIST_DIR:-}" ]; then
  if [ -d .data/fashion-mnist ]; then
    export SCELLIS_FASHION_MNIST_DIR=$PWD/.data/fashion-mnist
  elif [ ! -d /usr/share/datasets/fashion-mnist ]; then
    # No dataset on this host: examples of the same shape (throughput does not depend on them).
    export SCELLIS_FASHION_MNIST_DIR=$PWD/out/synthetic-fashion-mnist
    [ -d "$SCELLIS_FASHION_MNIST_DIR" ] || python3 bench/multigpu/make_synthetic_idx.py "$SCELLIS_FASHION_MNIST_DIR"
  fi
fi
export SCELLIS_NO_RECORD=1

# mpirun: the host's, else the bundled copy.
if command -v mpirun >/dev/null; then
  MPI_FROM="the host ($(command -v mpirun))"
elif [ -f dist/mpi/env.sh ]; then
  # shellcheck disable=SC1091
  . dist/mpi/env.sh
  MPI_FROM="dist/mpi (bundled)"
else
  echo "no mpirun on this host and no dist/mpi: run tools/bundle_openmpi.sh where OpenMPI is" >&2
  exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host: shared memory between the ranks. No binding: a rank's host work (gathering batches,
# summing partials) uses several cores.
MPIRUN=(mpirun -np 2 --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none)

FLAGS=(--backend="$BACKEND" --epochs "$EPOCHS" --max-steps "$STEPS" --json --threads=0)
[ "${SOFTWARE:-0}" = 1 ] && FLAGS+=(--allow-software-adapter)

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "scellis: $SCELLIS; backend $BACKEND; model $MODEL; $EPOCHS epochs x $STEPS steps; mpirun from $MPI_FROM"
  echo "data: ${SCELLIS_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
} | tee "$OUT/conditions.txt"

echo "== (a) one GPU, the step in one piece"
"$SCELLIS" train "$MODEL" "${FLAGS[@]}" >"$OUT/one_gpu.json" 2>"$OUT/one_gpu.err" ||
  { cat "$OUT/one_gpu.err"; exit 1; }
echo "== (a2) one GPU, the data-parallel step of 2 chunks (host staging, no second GPU)"
"$SCELLIS" train "$MODEL" "${FLAGS[@]}" --chunks=2 >"$OUT/one_gpu_2chunks.json" \
  2>"$OUT/one_gpu_2chunks.err" || { cat "$OUT/one_gpu_2chunks.err"; exit 1; }
echo "== (b) two GPUs: ${MPIRUN[*]} scellis train --ranks=2"
timeout 1800 "${MPIRUN[@]}" "$SCELLIS" train "$MODEL" "${FLAGS[@]}" --ranks=2 \
  >"$OUT/two_gpus.json" 2>"$OUT/two_gpus.err" || { cat "$OUT/two_gpus.err"; exit 1; }
grep "^rank [0-9]: " "$OUT/two_gpus.err" | sort | tee "$OUT/two_gpus_adapters.txt" || true
if [ "$BACKEND" = webgpu ]; then
  # Each rank must have opened its own adapter wherever the host has two.
  python3 - "$OUT/two_gpus_adapters.txt" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
seen = [re.search(r"adapter (\d+) of (\d+)", l) for l in lines]
if len(seen) != 2 or not all(seen):
    sys.exit(f"expected one adapter line per rank, got: {lines}")
indices = {m.group(1) for m in seen}
count = int(seen[0].group(2))
if count >= 2 and len(indices) != 2:
    sys.exit(f"both ranks opened the same adapter of {count}: {lines}")
print(f"ranks on adapters {sorted(indices)} of {count}")
EOF
fi

if [ "$PEER" = torch ]; then
  for gpus in 1 2; do
    echo "== (c) PyTorch DDP, $gpus GPU(s)"
    # shellcheck disable=SC2086
    python3 bench/multigpu/ddp_peer.py --gpus $gpus --steps $((STEPS * (EPOCHS - 1) > 0 ? STEPS * (EPOCHS - 1) : STEPS)) \
      ${PEER_ARGS:-} >"$OUT/ddp_${gpus}.json" 2>"$OUT/ddp_${gpus}.err" ||
      { cat "$OUT/ddp_${gpus}.err"; echo "(PyTorch DDP with $gpus GPU(s) failed; see above)"; }
  done
fi

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, os, sys
out = sys.argv[1]

def scellis(name):
    r = json.load(open(os.path.join(out, name)))
    timed = r["epochs"][1:] or r["epochs"]  # the first epoch compiles the pipelines
    steps = sum(e["steps"] for e in timed)
    seconds = sum(e["train_seconds"] for e in timed)
    all_steps = sum(e["steps"] for e in r["epochs"])
    return r, steps / seconds, steps * r["batch"] / seconds, all_steps

rows = []
base = None
for label, name in [("Scellis, 1 GPU, step in one piece", "one_gpu.json"),
                    ("Scellis, 1 GPU, data-parallel step (2 chunks)", "one_gpu_2chunks.json"),
                    ("Scellis, 2 GPUs (MPI, 2 ranks)", "two_gpus.json")]:
    r, sps, samples, all_steps = scellis(name)
    base = base or samples
    rows.append((label, sps, samples, samples / base))
    order = ["steps", "weights_copy", "weights_download", "gradients", "reduce_local", "all_gather", "combine",
             "update"]
    if r["step_seconds"] and r["gradient_bytes_per_step"]:
        phases = ", ".join(f"{k} {1000 * r['step_seconds'][k] / all_steps:.1f}"
                           for k in order if k in r["step_seconds"])
        rows[-1] += (f"ms per step (rank 0, all {all_steps} steps): {phases}; "
                     f"{r['gradient_bytes_per_step'] / 2**20:.1f} MiB of gradients per step",)
for gpus in (1, 2):
    path = os.path.join(out, f"ddp_{gpus}.json")
    if os.path.exists(path) and os.path.getsize(path):
        d = json.load(open(path))
        rows.append((f"PyTorch DDP ({d['backend']}), {gpus} GPU(s), {d['device']}",
                     d["steps_per_second"], d["samples_per_second"], d["samples_per_second"] / base))
print("| run | steps/s | samples/s | vs Scellis 1 GPU |")
print("| --- | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r[0]} | {r[1]:.2f} | {r[2]:.0f} | {r[3]:.2f}x |")
print()
for r in rows:
    if len(r) > 4:
        print(f"- {r[0]}: {r[4]}")
EOF
