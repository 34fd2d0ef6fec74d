#!/usr/bin/env bash
# What one dependent dispatch costs: chains of N trivial kernels (bench/dispatch/chain_doc.py),
# 64 steps in one run on the WebGPU backend, the elementwise fusion off so each kernel stays a
# dispatch; one JSON line per N with the run's wall time, dispatches and the host's recording time.
# The slope over N is one more dispatch's cost. Usage:
#   bench/dispatch/run.sh [SCELLIS] [N ...]        (default dist/scellis; N = 1 16 64 256)
set -euo pipefail
S=${1:-dist/scellis}
shift || true
NS=${*:-1 16 64 256}
T=$(mktemp -d)
for n in $NS; do
  python3 "$(dirname "$0")/chain_doc.py" "$n" > "$T/doc.json"
  "$S" run "$T/doc.json" --tier=prod --steps 64 --json --backend=webgpu ${SCELLIS_RUN_FLAGS:-} \
    --disable-pass fuse-elementwise 2>/dev/null |
    python3 -c "
import json, sys
s = json.load(sys.stdin)['stats']
print(json.dumps({'kernels': $n, 'steps': s['steps'], 'dispatches': s['dispatches'],
                  'submissions': s['submissions'], 'wall_ms': s['wall_ms'],
                  'host_record_ms': s.get('host_record_ms'), 'host_encode_ms': s.get('host_encode_ms'),
                  'host_send_ms': s.get('host_send_ms')}))"
done
rm -rf "$T"
