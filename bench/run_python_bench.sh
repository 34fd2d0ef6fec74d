#!/usr/bin/env bash
# The Python front end's training-step benchmark on a GPU machine: the C++ session
# (scellis_bench_mlp, 1/8/64 steps per submission) and the captured step from Python
# (bench/python_step_bench.py, with PyTorch eager, CUDA graph and torch.compile beside it), in one
# job on the same GPU. Expects dist/scellis_bench_mlp and a wheel of the package built for the
# machine's python3 in .whl312/ (installed into a scratch folder: nothing of the machine's
# Python is changed). Writes JSON lines to $OUT/python_bench.jsonl.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
R="$OUT/python_bench.jsonl"
: > "$R"
PY_TARGET=$(mktemp -d)
python3 -m pip install -q --no-deps --no-index --target "$PY_TARGET" .whl312/scellis-*.whl
export PYTHONPATH="$PY_TARGET${PYTHONPATH:+:$PYTHONPATH}"
for backend in webgpu null; do
  dist/scellis_bench_mlp examples/fashion_mlp.json $backend 2048 | tee -a "$R"
done
python3 bench/python_step_bench.py --backend webgpu --steps 2048 2>&1 | tee -a "$R"
