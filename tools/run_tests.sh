#!/usr/bin/env bash
# Every test: the unit/integration suite, the examples on the CPU reference and on SwiftShader,
# PyTorch agreement, the Studio's browser side, the fuzz corpora and a short fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
# GPU paths run on SwiftShader, Dawn's software Vulkan adapter, which Debian's chromium ships.
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/lib/chromium/vk_swiftshader_icd.json}
# Receipts and run records go to a store of this run's own, never the user's.
CONFORM_STORE=$(mktemp -d)
fuzz_build_pid=
trap '[ -z "$fuzz_build_pid" ] || kill -- "-$fuzz_build_pid" 2>/dev/null; rm -rf "$CONFORM_STORE"' EXIT
export SCELLIS_STORE="$CONFORM_STORE/store"

# The sanitized fuzz targets take minutes of compiling that no suite before the fuzz section needs.
# The build runs beside the browser side's build and the suites at the lowest priority, so it takes
# only the cores they leave idle (the TypeScript and Vite builds and most suites below use one), and
# the fuzz section waits for what is left of it. It is a
# process group of its own, so a failing suite stops its compilers too. A new session is also a new
# scheduling group where the kernel groups by session (autogroup), and groups share the CPU equally
# whatever their processes' nice values, so the build lowers its group's own priority as well:
# niced alone, it took half the cores from the unit suite (that suite ran twice as long).
FUZZ_OPT=-O0 FUZZ_BUILD_ONLY=1 setsid bash -c \
  '{ echo 19 > /proc/self/autogroup; } 2>/dev/null; exec nice -n 19 bash tools/run_fuzz.sh 10' \
  > "$CONFORM_STORE/fuzz_build.log" 2>&1 &
fuzz_build_pid=$!

# Each section says how long the suite has run so far, so a slow one shows where the time went.
section() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# The Studio's browser side, its runtime and the WebAssembly reference (each rebuilt only when its
# sources changed): the browser, Node and WebAssembly suites below run them.
section "building the browser side: the runtime, the WebAssembly reference, the Studio"
bash tools/build_web.sh

# The suite in many shards (GoogleTest's sharding), a core's worth running at a time, the next
# starting as one finishes: the tests are independent and most run on one thread, and a few take
# tens of seconds on SwiftShader (a training, a step's every fusion), so shards as many as the cores
# would leave one core idle while the other finishes its slow ones.
section "unit and integration tests"
shards=$(($(nproc) * 8))
failed=0
seq 0 $((shards - 1)) | xargs -P "$(nproc)" -I{} bash -c \
  'GTEST_TOTAL_SHARDS=$0 GTEST_SHARD_INDEX=$1 "$2" --gtest_brief=1 > "$3/gtest_shard_$1.log" 2>&1' \
  "$shards" {} "$BUILD/scellis_tests" "$CONFORM_STORE" || failed=1
for ((i = 0; i < shards; i++)); do cat "$CONFORM_STORE/gtest_shard_$i.log"; done
[ "$failed" = 0 ] || { echo "unit and integration tests failed (above)" >&2; exit 1; }

section "examples on the CPU reference"
for f in examples/*.json; do
  "$BUILD/scellis" validate "$f" --tier=prod >/dev/null
done
"$BUILD/scellis" run examples/seed_mul_relu.json --tier=prod --backend=cpu 2>/dev/null | grep -q '\[0, 60, 120\]'

section "conformance: every GPU kernel against the CPU reference, on SwiftShader"
"$BUILD/scellis" conform --tier=prod --backend=webgpu --allow-software-adapter
"$BUILD/scellis" conform --tier=debug --backend=webgpu --allow-software-adapter
# The receipts just minted are what `scellis run` reports for this profile.
"$BUILD/scellis" run examples/matmul_chain.json --tier=prod \
  --backend=webgpu --allow-software-adapter 2>/dev/null | grep -qE 'receipts: ([0-9]+)/\1 kernels conformed'

section "every example on SwiftShader gives the reference's answer"
for f in examples/*.json; do
  grep -q '"train"' "$f" && continue
  "$BUILD/scellis" run "$f" --tier=prod --backend=cpu --json 2>/dev/null > "$CONFORM_STORE/cpu.json"
  "$BUILD/scellis" run "$f" --tier=prod --backend=webgpu --allow-software-adapter --json 2>/dev/null > "$CONFORM_STORE/gpu.json"
  python3 tools/compare_outputs.py "$CONFORM_STORE/cpu.json" "$CONFORM_STORE/gpu.json" "$f"
  # Each run's record replays: bit-exact on the reference, within its tolerance on SwiftShader.
  for result in cpu gpu; do
    id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' \
      "$CONFORM_STORE/$result.json")
    "$BUILD/scellis" replay "$id" >/dev/null
  done
done
"$BUILD/scellis" store verify

section "training on SwiftShader (a short epoch) and on the CPU reference"
"$BUILD/scellis" train examples/fashion_mlp.json --backend=webgpu --allow-software-adapter \
  --epochs 1 --max-steps 16 --steps-per-run 8 2>/dev/null | grep -q "on webgpu"
section "data-parallel training over MPI: 2 ranks equal one process bit for bit; failing ranks"
bash tools/run_mpi_tests.sh "$BUILD"
section "agreement with PyTorch (CPU) and bit-exact resume"
SCELLIS_BUILD="$BUILD" .venv/bin/python -m pytest -q tests/peer tests/train tests/layering

section "the Python package: every Tensor method against NumPy, sessions, errors (CPU and SwiftShader)"
SCELLIS_BUILD="$BUILD" .venv/bin/python -m pytest -q tests/python

section "the Studio's canvas: unit tests, and conformance of a WebGPU device (Dawn in Node) through the server"
SCELLIS_BUILD="$(cd "$BUILD" && pwd)" npm --prefix web test --silent
# The WebAssembly engine, built by tools/build_wasm.sh (above): the browser runtime's
# pipelines are lowered by it and the reference's tests run it. A missing build fails here, never
# skips.
for f in web/wasm/dist/scellis_reference.wasm web/wasm/dist/index.js; do
  [ -f "$f" ] || { echo "missing $f: run tools/build_wasm.sh" >&2; exit 1; }
done
section "the browser runtime under Node: WebGPU (Dawn on SwiftShader) on the engine's device programs, and pipelines traced from TypeScript"
SCELLIS_DEVICE_PROGRAM="$(cd "$BUILD" && pwd)/scellis_device_program" npm --prefix web/runtime test --silent
section "the Studio in a real browser"
SCELLIS_BUILD="$(cd "$BUILD" && pwd)" node --test tests/studio/
section "WebAssembly reference: every example bit for bit as the native reference, in Node and in Chromium"
SCELLIS_BUILD="$(cd "$BUILD" && pwd)" npm --prefix web/wasm test --silent

section "the fuzz corpora replayed through every fuzz target (built without libFuzzer)"
for src in tools/fuzz/*_fuzz.cpp; do
  name="$(basename "$src" _fuzz.cpp)"
  seeds="$(mktemp -d)"
  bash tools/fuzz/seeds.sh "$name" "$seeds"
  "$BUILD/${name}_fuzz" "$seeds"/* | tail -n 1
  rm -rf "$seeds"
done
section "fuzzing every target briefly (10 s each, built at -O0; longer campaigns at -O1: tools/run_fuzz.sh SECONDS)"
if ! wait "$fuzz_build_pid"; then
  fuzz_build_pid=
  cat "$CONFORM_STORE/fuzz_build.log"
  echo "building the fuzz targets failed (above)" >&2
  exit 1
fi
fuzz_build_pid=
tail -n 1 "$CONFORM_STORE/fuzz_build.log"
# Two runs side by side, a core each: the document target (its 3 309 seeds take about a minute to
# replay under the sanitizers before its 10 s of fuzzing) beside the other five in turn.
others=()
for src in tools/fuzz/*_fuzz.cpp; do
  name="$(basename "$src" _fuzz.cpp)"
  [ "$name" = document ] || others+=("$name")
done
FUZZ_OPT=-O0 FUZZ_NO_BUILD=1 bash tools/run_fuzz.sh 10 document > "$CONFORM_STORE/fuzz_document.log" 2>&1 &
document_pid=$!
fuzz_failed=0
FUZZ_OPT=-O0 FUZZ_NO_BUILD=1 bash tools/run_fuzz.sh 10 "${others[@]}" > "$CONFORM_STORE/fuzz_others.log" 2>&1 || fuzz_failed=1
wait "$document_pid" || fuzz_failed=1
cat "$CONFORM_STORE/fuzz_others.log" "$CONFORM_STORE/fuzz_document.log"
[ "$fuzz_failed" = 0 ] || { echo "fuzzing found a failure (above)" >&2; exit 1; }
echo "all tests passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
