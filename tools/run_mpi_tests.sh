#!/usr/bin/env bash
# Data-parallel training over MPI on the CPU reference, two ranks on this machine (loopback):
#   1. the checkpoint and losses of `mpirun -np 2 scellis train --ranks=2` are byte for byte those
#      of one process declared with the same chunks (--chunks=2; and 4 chunks, 2 per rank), also
#      when each rank reads its chunks from the dataset's files (--stream-dataset);
#   2. a checkpoint written by one process resumes on two ranks, equal to one process throughout;
#   3. each shard of a recorded step (--record-shards) re-runs alone, bit for bit (scellis verify);
#   4. a rank that fails stops the other with a named cause; a killed rank ends the job; a rank
#      that hangs is given up after --collective-timeout (rank-lost). Every run is bounded;
#   5. on WebGPU (SwiftShader offered twice, as two GPUs) each rank opens its own adapter, and an
#      adapter index that is not there is refused by name;
#   6. a run whose one matmul is red on one device runs on two ranks in blocks of the output's rows
#      (or columns), gathered to rank 0, equal bit for bit to one process with the budget to fit;
#      a rank whose device fails mid-run stops the job by name, and a rank that never reaches the
#      gather is given up after --collective-timeout.
# Skipped, with the reason, only when mpirun is missing.
#
# usage: tools/run_mpi_tests.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
SCELLIS="$(cd "$BUILD" && pwd)/scellis"

if ! command -v mpirun >/dev/null; then
  echo "skipped: mpirun not found (tools/setup.sh test installs openmpi-bin libopenmpi-dev)"
  exit 0
fi
# mpirun refuses root unless told; CI containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Loopback only, no probing of other transports' hardware.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(timeout 120 mpirun -np 2 --oversubscribe)

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TRAIN=(train examples/fashion_mlp.json --backend=cpu --threads=1 --epochs 1 --max-steps 12)
start=$SECONDS

fail() { echo "FAIL: $*" >&2; exit 1; }
same() {  # same FILE_A FILE_B WHAT
  cmp -s "$1" "$2" || fail "$3: $1 and $2 differ"
}

echo "-- --ranks=2 outside a 2-process job is refused"
rc=0; "$SCELLIS" "${TRAIN[@]}" --ranks=2 >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q "rank-count-mismatch" "$TMP/err" || { cat "$TMP/err"; fail "one process, --ranks=2"; }
echo "-- 2 ranks equal one process with the same chunks, bit for bit"
for chunks in 2 4; do
  "$SCELLIS" "${TRAIN[@]}" --chunks=$chunks --checkpoint "$TMP/one_$chunks.safetensors" \
    --losses-out "$TMP/one_$chunks.json" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "one process"; }
  "${MPIRUN[@]}" "$SCELLIS" "${TRAIN[@]}" --ranks=2 --chunks=$chunks \
    --checkpoint "$TMP/two_$chunks.safetensors" --losses-out "$TMP/two_$chunks.json" \
    >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "mpirun -np 2"; }
  grep -q "data parallel: 2 ranks, $chunks chunks" "$TMP/out" || fail "rank 0's summary: $(cat "$TMP/out")"
  same "$TMP/one_$chunks.safetensors" "$TMP/two_$chunks.safetensors" "checkpoint, $chunks chunks"
  same "$TMP/one_$chunks.json" "$TMP/two_$chunks.json" "losses, $chunks chunks"
  echo "   $chunks chunks: checkpoint and 12 losses identical"
done
echo "-- 2 ranks reading their chunks from the files equal one process holding the set"
SCELLIS_STORE="$TMP/stream-store" "${MPIRUN[@]}" "$SCELLIS" "${TRAIN[@]}" --ranks=2 --chunks=2 \
  --stream-dataset --no-record --checkpoint "$TMP/two_streamed.safetensors" \
  --losses-out "$TMP/two_streamed.json" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "mpirun -np 2 --stream-dataset"; }
grep -q "warning\[streamed-dataset\]" "$TMP/err" || fail "no streamed-dataset warning: $(cat "$TMP/err")"
same "$TMP/one_2.safetensors" "$TMP/two_streamed.safetensors" "checkpoint, streamed on 2 ranks"
same "$TMP/one_2.json" "$TMP/two_streamed.json" "losses, streamed on 2 ranks"
echo "   streamed on 2 ranks: checkpoint and 12 losses identical to one process holding the set"
# The chunking is part of the arithmetic: 2 and 4 chunks round differently (else the test above
# could not tell a sharded sum from any other).
! cmp -s "$TMP/one_2.safetensors" "$TMP/one_4.safetensors" || fail "2 and 4 chunks gave the same bits"

echo "-- a checkpoint of one process resumes on two ranks"
RESUME=(train examples/fashion_mlp.json --backend=cpu --threads=1 --max-steps 6 --chunks=2)
"$SCELLIS" "${RESUME[@]}" --epochs 1 --checkpoint "$TMP/e1.safetensors" >/dev/null 2>&1
"$SCELLIS" "${RESUME[@]}" --epochs 2 --resume "$TMP/e1.safetensors" --checkpoint "$TMP/e2_one.safetensors" \
  >/dev/null 2>&1
"${MPIRUN[@]}" "$SCELLIS" "${RESUME[@]}" --epochs 2 --ranks=2 --resume "$TMP/e1.safetensors" \
  --checkpoint "$TMP/e2_two.safetensors" >/dev/null 2>"$TMP/err" || { cat "$TMP/err"; fail "resume on 2 ranks"; }
same "$TMP/e2_one.safetensors" "$TMP/e2_two.safetensors" "epoch 2 resumed"
echo "   epoch 2 from the same checkpoint: identical"

echo "-- each shard of a recorded step re-runs alone, bit for bit"
ID=$(SCELLIS_STORE="$TMP/store" "${MPIRUN[@]}" "$SCELLIS" "${TRAIN[@]}" --ranks=2 --chunks=4 \
  --record-shards 2>/dev/null | sed -n 's/.*shard record \(sha256:[0-9a-f]*\).*/\1/p')
[ -n "$ID" ] || fail "no shard record printed"
for k in 0 1; do
  SCELLIS_STORE="$TMP/store" "$SCELLIS" verify "$ID" --shard $k >"$TMP/out" 2>&1 ||
    { cat "$TMP/out"; fail "verify --shard $k"; }
  grep -q "equal bit for bit" "$TMP/out" || fail "verify --shard $k: $(cat "$TMP/out")"
  echo "   $(cat "$TMP/out")"
done

# A launcher that makes rank 1 misbehave; rank 0 runs the plain command.
cat >"$TMP/rank1.sh" <<'EOF'
#!/usr/bin/env bash
mode=$1; shift
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then
  case "$mode" in
    fail) set -- "$@" --resume /nonexistent/checkpoint.safetensors ;;
    kill) (sleep 2; kill -KILL $$) & ;;
    hang) (sleep 2; kill -STOP $$) & ;;
  esac
fi
exec "$@"
EOF
chmod +x "$TMP/rank1.sh"
LONG=(train examples/fashion_mlp.json --backend=cpu --threads=1 --epochs 1 --ranks=2)
expect_stop() {  # expect_stop MODE PATTERN... : the job ends non-zero, stderr holds each pattern
  local mode=$1; shift
  local t0=$SECONDS rc=0
  "${MPIRUN[@]}" "$TMP/rank1.sh" "$mode" "$SCELLIS" "${LONG[@]}" --collective-timeout=5 \
    >/dev/null 2>"$TMP/err" || rc=$?
  [ "$rc" != 0 ] || fail "$mode: the job succeeded"
  [ "$rc" != 124 ] || fail "$mode: the job hung until the test's timeout"
  for p in "$@"; do grep -q -- "$p" "$TMP/err" || { cat "$TMP/err"; fail "$mode: no '$p'"; }; done
  echo "   rank 1 $mode: the job stopped in $((SECONDS - t0)) s (exit $rc): $*"
}
echo "-- a failing, killed or hung rank stops the job with a named cause"
expect_stop fail "rank 1 of 2 failed" "error\[file-not-found\]"
expect_stop kill "rank 0 of 2: error\[job-ended\]"
expect_stop hang "rank 0 of 2 failed" "error\[rank-lost\]"

echo "-- WebGPU: each rank opens its own adapter; an adapter that is not there is refused by name"
SWIFTSHADER=/usr/lib/chromium/vk_swiftshader_icd.json
[ -f "$SWIFTSHADER" ] || fail "SwiftShader is missing ($SWIFTSHADER, from Debian's chromium; make setup)"
# The same SwiftShader driver named by a second manifest: the Vulkan loader then offers it twice,
# so Dawn offers two adapters, as on a host with two GPUs.
sed 's#"library_path": *"\./#"library_path": "/usr/lib/chromium/#' "$SWIFTSHADER" >"$TMP/swiftshader_b.json"
GPU=(env VK_ICD_FILENAMES="$SWIFTSHADER:$TMP/swiftshader_b.json")
WEBGPU=(train examples/fashion_mlp.json --backend=webgpu --allow-software-adapter --epochs 1 --max-steps 2)
rc=0; "${GPU[@]}" "$SCELLIS" "${WEBGPU[@]}" --adapter=5 >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q "error\[adapter-not-found\]: there is no WebGPU adapter 5" "$TMP/err" &&
  grep -q "1: SwiftShader" "$TMP/err" || { cat "$TMP/err"; fail "--adapter=5 of 2 adapters"; }
echo "   --adapter=5: exit 2, adapter-not-found, listing adapters 0 and 1"
"${GPU[@]}" "${MPIRUN[@]}" "$SCELLIS" "${WEBGPU[@]}" --ranks=2 >/dev/null 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "mpirun -np 2 on WebGPU"; }
for r in 0 1; do
  grep -q "^rank $r: adapter $((r + 1)) of 2: SwiftShader.*, by MPI local rank $r$" "$TMP/err" ||
    { cat "$TMP/err"; fail "rank $r did not open adapter $((r + 1)) of 2"; }
done
echo "   $(grep "^rank [01]: adapter" "$TMP/err" | sort | tr '\n' ';')"
echo "-- a matmul too large for one device's budget, in blocks over 2 ranks"
# examples/workplan/matmul_blocks.json cuts a's rows; this one, b's columns (b is the larger operand).
cat >"$TMP/columns.json" <<'EOF'
{"format": "scellis.workflow/1", "name": "matmul_columns", "determinism": "debug",
 "budget": {"memory_bytes": 163840},
 "nodes": [
  {"id": "a", "type": "param", "params": {"shape": [16, 64], "init": {"kind": "uniform", "low": -1, "high": 1, "seed": 21}}},
  {"id": "b", "type": "param", "params": {"shape": [64, 512], "init": {"kind": "uniform", "low": -1, "high": 1, "seed": 22}}},
  {"id": "y", "type": "matmul"}],
 "wires": [{"from": "a", "to": "y.a"}, {"from": "b", "to": "y.b"}],
 "outputs": [{"name": "y", "from": "y"}]}
EOF
RUN=(run --backend=cpu --threads=1 --no-record --json)
for doc in examples/workplan/matmul_blocks.json "$TMP/columns.json"; do
  rc=0; "$SCELLIS" "${RUN[@]}" "$doc" >/dev/null 2>"$TMP/err" || rc=$?
  [ "$rc" = 2 ] && grep -q "memory-over-budget" "$TMP/err" || { cat "$TMP/err"; fail "$doc fits one device"; }
  "$SCELLIS" "${RUN[@]}" "$doc" --budget=1G --out "$TMP/one.json" >/dev/null 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "$doc, one process"; }
  "${MPIRUN[@]}" "$SCELLIS" "${RUN[@]}" "$doc" --ranks=2 --out "$TMP/two.json" >/dev/null 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "$doc, mpirun -np 2"; }
  axis=$(python3 - "$TMP/one.json" "$TMP/two.json" <<'PY'
import json, sys
one, two = (json.load(open(f)) for f in sys.argv[1:3])
assert one["outputs"] == two["outputs"], "the outputs differ"
assert two["stats"]["ranks"] == 2
print(two["stats"]["axis"], len(two["outputs"]["y"]["data"]))
PY
  ) || fail "$doc: 2 ranks differ from one process"
  echo "   $(basename "$doc"): red alone; 2 ranks by $axis values identical to one process"
done
# Faults around the gather. Rank 1's device fails its first allocation (WebGPU's injected fault):
# rank 1 names the cause and ends the job before rank 0 waits for its block.
cat >"$TMP/rank1_faulty.sh" <<'EOF'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then
  case "$1" in
    allocation) export SCELLIS_FAULT_ALLOCATION=1 ;;
    refuses) set -- "$@" --budget=1K ;;
  esac
fi
shift
exec "$@"
EOF
chmod +x "$TMP/rank1_faulty.sh"
SPLIT=(run examples/workplan/matmul_blocks.json --no-record --json --ranks=2 --collective-timeout=2)
rc=0
"${GPU[@]}" "${MPIRUN[@]}" "$TMP/rank1_faulty.sh" allocation "$SCELLIS" "${SPLIT[@]}" \
  --backend=webgpu --allow-software-adapter >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "rank 1 of 2 failed" "$TMP/err" &&
  grep -q "error\[gpu-out-of-memory\].*injected fault" "$TMP/err" ||
  { cat "$TMP/err"; fail "rank 1's failed allocation during the split run"; }
echo "   rank 1's device fails an allocation: the job stopped (exit $rc), gpu-out-of-memory named"
# Rank 1 alone refuses the document (a budget only it is given), so it never reaches the gather:
# rank 0 gives it up after the collective timeout instead of waiting for ever.
rc=0; t0=$SECONDS
"${MPIRUN[@]}" "$TMP/rank1_faulty.sh" refuses "$SCELLIS" "${SPLIT[@]}" --backend=cpu --threads=1 \
  >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "error\[rank-lost\].*gather of the output's blocks" "$TMP/err" ||
  { cat "$TMP/err"; fail "a rank that never reaches the gather"; }
echo "   rank 1 never reaches the gather: rank-lost after $((SECONDS - t0)) s (exit $rc)"

echo "mpi tests passed in $((SECONDS - start)) s"
