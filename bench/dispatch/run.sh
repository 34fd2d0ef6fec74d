#!/usr/bin/env bash
# What one dependent dispatch costs: chains of N trivial kernels (bench/dispatch/chain_doc.py),
# 64 steps in one run on the WebGPU backend, the elementwise fusion off so each kernel stays a
# dispatch. Two JSON lines per N: untimed (the run's wall time, dispatches and the host's
# recording time; the slope over N is one more dispatch's cost), and with --gpu-timestamps (each
# dispatch in a compute pass of its own, its kernel's time by the GPU's clock; at most the first
# 2048 dispatches of a run are timed). Usage:
#   bench/dispatch/run.sh [SCELLIS] [N ...]        (default dist/scellis; N = 1 16 64 256)
set -euo pipefail
S=${1:-dist/scellis}
shift || true
NS=${*:-1 16 64 256}
T=$(mktemp -d)
for n in $NS; do
  python3 "$(dirname "$0")/chain_doc.py" "$n" > "$T/doc.json"
  for timed in "" --gpu-timestamps; do
    "$S" run "$T/doc.json" --tier=prod --steps 64 --json --backend=webgpu ${SCELLIS_RUN_FLAGS:-} \
      --disable-pass fuse-elementwise --no-record $timed 2>/dev/null |
      python3 -c "
import json, sys
s = json.load(sys.stdin)['stats']
row = {'kernels': $n, 'timed': '$timed' != '', 'steps': s['steps'], 'dispatches': s['dispatches'],
       'submissions': s['submissions'], 'wall_ms': s['wall_ms'],
       'host_record_ms': s.get('host_record_ms'), 'host_encode_ms': s.get('host_encode_ms'),
       'host_send_ms': s.get('host_send_ms')}
g = s.get('gpu_timestamps')
if g:
    row.update({'timed_dispatches': g['dispatches'], 'gpu_busy_us': g['busy_us'],
                'gpu_gaps_us': g['gaps_us'],
                'gpu_us_per_dispatch': g['busy_us'] / max(g['dispatches'], 1),
                'gpu_gap_us_per_dispatch': g['gaps_us'] / max(g['dispatches'] - 1, 1)})
print(json.dumps(row))"
  done
done
rm -rf "$T"
