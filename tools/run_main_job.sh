#!/usr/bin/env bash
# The main job: trains the 784-256-10 MLP on Fashion-MNIST (examples/fashion_mlp.json) on the best
# backend this machine has, after a short tour of the smaller examples.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
S="$BUILD/scellis"
"$S" probe
echo
for f in examples/seed_mul_relu.json examples/center_columns.json; do
  echo "### $f"
  "$S" run "$f" --tier=prod
  echo
done
echo "### examples/fashion_mlp.json: 10 epochs, Adam, batch 64"
"$S" train examples/fashion_mlp.json --steps-per-run 8 --checkpoint "$BUILD/fashion_mlp.safetensors"
