#!/usr/bin/env bash
# One epoch of the main job (examples/fashion_mlp.json: 784-256-10, batch 64, Adam, 937 steps) on
# the CPU reference against PyTorch CPU eager on the same number of threads, REPS times each,
# interleaved (Scellis, PyTorch, Scellis, ...) so that a drift of a shared machine hits both.
# Scellis: the epoch's training seconds from `scellis train --json` (batch gathering included);
# PyTorch: bench/peer/torch_mlp.py --mode eager --steps 937, batches pre-built, its time per step
# times 937. Prints one row per run and the medians.
#
# usage: bench/cpu_epoch.sh [SCELLIS] [THREADS] [REPS]    (defaults: build/scellis, 2, 3)
# PYTHON names a python with torch (default: .venv/bin/python, else python3).
set -euo pipefail
S=${1:-build/scellis}
THREADS=${2:-2}
REPS=${3:-3}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
STEPS=937
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

"$S" train examples/fashion_mlp.json --backend=cpu --epochs 1 --max-steps 1 \
  --init-out "$OUT/init.safetensors" >/dev/null 2>&1

scellis_epoch() {
  "$S" train examples/fashion_mlp.json --backend=cpu --threads "$THREADS" --epochs 1 --json \
    2>/dev/null | "$PY" -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["epochs"][0]["train_seconds"])'
}
torch_epoch() {
  "$PY" bench/peer/torch_mlp.py --init "$OUT/init.safetensors" --device cpu --mode eager \
    --steps $STEPS --threads "$THREADS" |
    "$PY" -c "import json,sys; print('%.3f' % (json.load(sys.stdin)['us_per_step'] * $STEPS / 1e6))"
}

echo "one epoch ($STEPS steps of batch 64), $THREADS threads, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %-28s %-28s\n' run "Scellis CPU reference (s)" "PyTorch CPU eager (s)"
: > "$OUT/s.txt"
: > "$OUT/t.txt"
for r in $(seq "$REPS"); do
  s=$(scellis_epoch)
  t=$(torch_epoch)
  echo "$s" >> "$OUT/s.txt"
  echo "$t" >> "$OUT/t.txt"
  printf '%-4s %-28s %-28s\n' "$r" "$s" "$t"
done
median() { sort -g "$1" | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ms=$(median "$OUT/s.txt")
mt=$(median "$OUT/t.txt")
printf '%-4s %-28s %-28s\n' median "$ms" "$mt"
awk -v s="$ms" -v t="$mt" 'BEGIN {printf "Scellis / PyTorch: %.2f\n", s / t}'
