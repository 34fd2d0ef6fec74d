#!/usr/bin/env bash
# One epoch of examples/fashion_mlp.json with the dataset held whole and streamed from its files
# (--stream-dataset), on one backend: the epoch's training seconds, the process's peak resident
# memory, and whether every step's loss and the trained state agree bit for bit. The first
# streamed run inflates the gzipped files into the store (timed apart, as "inflate").
#
# usage: bench/dataset_stream.sh [SCELLIS] [BACKEND]    (defaults: build/scellis, cpu)
# On the H200 (bench/device/h200.sh): "bash bench/dataset_stream.sh dist/scellis webgpu".
# Data parallel: CHUNKS=K trains every run with --chunks=K; RANKS=N under `mpirun -np N` with
# --ranks=N (peak memory is then the largest rank's), e.g. on two H200s:
#   RANKS=2 bash bench/dataset_stream.sh dist/scellis webgpu
set -euo pipefail
S=${1:-build/scellis}
BACKEND=${2:-cpu}
RANKS=${RANKS:-1}
LAUNCH=()
PARALLEL=()
if [ "$RANKS" -gt 1 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  LAUNCH=(mpirun -np "$RANKS" --oversubscribe)
  PARALLEL=(--ranks="$RANKS")
fi
[ -n "${CHUNKS:-}" ] && PARALLEL+=(--chunks="$CHUNKS")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export SCELLIS_STORE=${SCELLIS_STORE:-$OUT/store}

train() {  # NAME [FLAGS...]: one epoch, its losses and checkpoint under $OUT/NAME.*
  local name=$1
  shift
  # Peak resident KiB of the child, read through getrusage (GNU time is not everywhere).
  python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$OUT/$name.rss" ${LAUNCH[@]+"${LAUNCH[@]}"} "$S" train examples/fashion_mlp.json \
    --backend="$BACKEND" --epochs 1 --no-record --json --losses-out "$OUT/$name.losses.json" \
    --checkpoint "$OUT/$name.safetensors" ${PARALLEL[@]+"${PARALLEL[@]}"} "$@" \
    >"$OUT/$name.json" 2>"$OUT/$name.err"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%-10s %8.3f s  %7.1f MiB  streamed=%s  accuracy %.4f" % (sys.argv[2], r["epochs"][0]["train_seconds"], int(open(sys.argv[3]).read())/1024, r["dataset_streamed"], r["test_accuracy"][-1]))' \
    "$OUT/$name.json" "$name" "$OUT/$name.rss"
}

echo "backend $BACKEND, $(nproc) cores, ranks $RANKS, chunks ${CHUNKS:-one per rank}"
start=$(date +%s.%N)
train inflate --stream-dataset --max-steps 1
echo "inflate + 1 step: $(python3 -c "import time; print('%.2f s' % (time.time() - $start))")"
train held
train streamed --stream-dataset
train held2
train streamed2 --stream-dataset
cmp -s "$OUT/held.losses.json" "$OUT/streamed.losses.json" && echo "losses: identical" ||
  echo "losses: DIFFER"
cmp -s "$OUT/held.safetensors" "$OUT/streamed.safetensors" && echo "trained state: identical" ||
  echo "trained state: DIFFERS"
