#!/usr/bin/env bash
# The copy bandwidth through Vulkan alone (vk_bandwidth.cpp), the reference beside the Scellis
# rows: the vec4 copy and vkCmdCopyBuffer over 2^26 floats with 0, 1 and 4 GiB of other
# buffers held (touched once, and untouched), each buffer in memory of its own or not, and over 2^28.
# vk_bandwidth also takes --host-ballast-mib=N [--host-cached] (system memory the GPU reaches held
# beside it, as staging buffers are), --robust (robustBufferAccess on, as Dawn creates devices) and
# --replay=TRACE (a vk_trace.cpp trace's allocations made first, the copy placed where Scellis's lay);
# the run also times the copy with --isolated (each copy a submission of its own, the host waiting
# and pausing between them: the GPU idle between kernels, as one step per submission leaves it).
#   build: bash bench/elementwise/vk_bandwidth.sh build   (needs glslang-tools, libvulkan-dev;
#          writes dist/vk_bandwidth, and dist/libvk_trace.so: vk_trace.cpp, which records what a
#          process such as Scellis's asks of Vulkan)
#   run:   bash bench/elementwise/vk_bandwidth.sh         (writes $OUT/vk_bandwidth.jsonl, prints a table)
#   trace: bash bench/elementwise/vk_bandwidth.sh trace [ARGS ...]  (Scellis's copy under
#          dist/libvk_trace.so, once per ARGS of scellis_bench_elementwise, each trace then
#          replayed by vk_bandwidth --replay beside a plain vk_bandwidth)
#   idle:  bash bench/elementwise/vk_bandwidth.sh idle  (whether the slow rows are a GPU left idle
#          between kernels: per size, 2^26 and 2^28, Scellis's copy at one step per submission and
#          at its chosen steps, and Vulkan alone isolated and back to back, GPU timestamps all;
#          rows in $OUT/vk_idle_rows.jsonl, one table printed; on an H100 on 2026-12-07 the
#          answer was no: the slow rows were a warm-up, bench/warm_up.h)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-run}" = build ]; then
  GEN=$(mktemp -d)
  glslangValidator -V --target-env vulkan1.2 --vn vk_copy_spv -o "$GEN/vk_copy.spv.h" "$HERE/vk_copy.comp" >/dev/null
  mkdir -p dist
  c++ -std=c++17 -O2 -Wall -I"$GEN" "$HERE/vk_bandwidth.cpp" -lvulkan -o dist/vk_bandwidth
  c++ -std=c++17 -O2 -Wall -shared -fPIC -Wl,-soname,libvulkan.so.1 "$HERE/vk_trace.cpp" -ldl \
    -o dist/libvk_trace.so
  rm -rf "$GEN"
  exit 0
fi
OUT=${OUT:-out}
mkdir -p "$OUT"
if [ "${1:-run}" = idle ]; then
  rows="$OUT/vk_idle_rows.jsonl"
  : > "$rows"
  for log2 in 26 28; do
    for steps in --steps=1 ""; do
      timeout 120 "${SCELLIS_BENCH_ELEMENTWISE:-dist/scellis_bench_elementwise}" --backend=webgpu \
        --kinds=copy --runs=10 --gpu-timestamps --log2=$log2 $steps >> "$rows" ||
        echo "{\"failed\": \"scellis --log2=$log2 $steps\"}" >> "$rows"
    done
    for isolated in --isolated ""; do
      timeout 120 "${VK_BANDWIDTH:-dist/vk_bandwidth}" --log2=$log2 $isolated >> "$rows" ||
        echo "{\"failed\": \"vk_bandwidth --log2=$log2 $isolated\"}" >> "$rows"
    done
  done
  python3 - "$rows" <<'PY'
import json, sys
print(f"{'floats':>6} {'who':28} {'steps per submission':>20} {'GB/s by GPU timestamps':>23}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "failed" in r:
        print("failed:", r["failed"])
    elif r.get("api") == "vulkan":
        print(f"2^{r['log2']:<4} {'Vulkan alone, vec4 copy':28} "
              f"{'1, isolated' if r['isolated'] else str(r['runs']) + ', back to back':>20} "
              f"{r['shader_gb_per_s']:>23.0f}")
    else:
        print(f"2^{r['elements'].bit_length() - 1:<4} {'Scellis ' + r['schedule']:28} "
              f"{r['steps_per_submission']:>20} {r.get('gpu_gb_per_s', float('nan')):>23.0f}")
PY
  exit 0
fi
if [ "${1:-run}" = trace ]; then
  # Scellis's copy through Dawn with the loader stand-in in place, once per case given after
  # `trace` (default: 2^26 alone, and with 1 GiB held beside it): what Dawn asks of Vulkan, one
  # $OUT/vk_trace_<case>.jsonl each, beside the rows the copy gives; then each trace's
  # allocations made again without Dawn (vk_bandwidth --replay) beside a plain vk_bandwidth, all
  # rows in $OUT/vk_trace_rows.jsonl.
  shift
  (($#)) || set -- "--log2=26" "--log2=26 --ballast-mib=1024"
  : > "$OUT/vk_trace_rows.jsonl"
  REAL=${VK_TRACE_REAL:-$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ {print $NF; exit}')}
  for args in "$@"; do
    trace="$OUT/vk_trace_$(echo "$args" | tr -c 'a-z0-9\n' _).jsonl"
    : > "$trace"  # vk_trace appends
    rows="$OUT/vk_trace_rows.jsonl"
    SCELLIS_VULKAN_LOADER=$PWD/dist/libvk_trace.so VK_TRACE_REAL=$REAL VK_TRACE_OUT="$trace" \
      "${SCELLIS_BENCH_ELEMENTWISE:-dist/scellis_bench_elementwise}" --backend=webgpu --kinds=copy \
      --runs=10 --gpu-timestamps $args | tee -a "$rows" || echo "{\"failed\": \"$args\"}" >> "$rows"
    log2=$(echo "$args" | sed -n 's/.*--log2=\([0-9]*\).*/\1/p')
    for replay in "--replay=$trace" ""; do
      "${VK_BANDWIDTH:-dist/vk_bandwidth}" --log2="${log2:-26}" $replay | tee -a "$rows" ||
        echo "{\"failed\": \"vk_bandwidth --log2=${log2:-26} $replay\"}" >> "$rows"
    done
  done
  exit 0
fi
R="$OUT/vk_bandwidth.jsonl"
: > "$R"
BIN=${VK_BANDWIDTH:-dist/vk_bandwidth}
for args in "--log2=26" "--log2=26 --ballast-mib=1024" "--log2=26 --ballast-mib=1024 --untouched-ballast" \
            "--log2=26 --ballast-mib=4096" "--log2=26 --dedicated" "--log2=26 --ballast-mib=1024 --dedicated" \
            "--log2=28" "--log2=28 --dedicated" "--log2=26 --host-visible" \
            "--log2=26 --ballast-mib=1024 --host-visible" "--log2=26 --isolated" "--log2=28 --isolated"; do
  timeout 120 "$BIN" $args >> "$R" || echo "{\"failed\": \"$args\"}" >> "$R"
done
python3 - "$R" <<'PY'
import json, sys
print(f"{'floats':>6} {'held MiB':>8} {'touched':>7} {'dedicated':>9} {'isolated':>8} {'type':>4} {'shader GB/s':>11} "
      f"{'best':>6} {'copy GB/s':>9} {'best':>6} correct")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "failed" in r:
        print("failed:", r["failed"]); continue
    print(f"2^{r['log2']:<4} {r['ballast_mib']:>8} {str(r['ballast_touched']):>7} {str(r['dedicated']):>9} "
          f"{str(r['isolated']):>8} "
          f"{r['memory_type']:>4} {r['shader_gb_per_s']:>11.0f} {r['shader_best_gb_per_s']:>6.0f} "
          f"{r['copy_buffer_gb_per_s']:>9.0f} {r['copy_buffer_best_gb_per_s']:>6.0f} {r['correct']}")
print("memory types:", json.loads(open(sys.argv[1]).readline()).get("memory_types"))
PY
