#!/usr/bin/env bash
# Whether the placement of memory is what drops every kernel to about 1.6 TB/s once the process's
# device holds 1 GiB or more (bench/RESULTS.md, 2026-12-03): the copy and the fused chain over 2^26
# floats with and without 1 GiB of untouched buffers beside them, and over 2^28, with Dawn's
# default placement (buffers sub-allocated from shared blocks) and with
# SCELLIS_DAWN_TOGGLES=disable_resource_suballocation (each buffer in memory of its own). GB/s from
# the wall time and from the kernels' GPU timestamps. Expects dist/scellis_bench_elementwise; on
# the H200 run it through bench/device/h200.sh. Writes $OUT/placement.jsonl and prints a table.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
R="$OUT/placement.jsonl"
: > "$R"
BENCH=${SCELLIS_BENCH_ELEMENTWISE:-dist/scellis_bench_elementwise}
for toggles in "" disable_resource_suballocation; do
  for shape in "26 0" "26 1024" "28 0"; do
    set -- $shape
    echo "{\"toggles\": \"$toggles\", \"ballast_mib\": $2}" >> "$R"
    SCELLIS_DAWN_TOGGLES=$toggles timeout 120 "$BENCH" --backend=webgpu --kinds=copy,chain \
      --runs=10 --gpu-timestamps --log2="$1" --ballast-mib="$2" >> "$R"
  done
done
python3 - "$R" <<'PY'
import json, sys
setting = None
print(f"{'placement':32} {'ballast MiB':>11} {'case':12} {'kernel':14} {'GB/s wall':>10} "
      f"{'GB/s kernel':>12}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "toggles" in r:
        setting = r
        continue
    print(f"{setting['toggles'] or 'default (sub-allocated)':32} {setting['ballast_mib']:>11} "
          f"{r['case']:12} {str(r.get('schedule')):14} {r['gb_per_s']:10.0f} "
          f"{r.get('gpu_gb_per_s', float('nan')):12.0f}")
PY
