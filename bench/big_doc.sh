#!/usr/bin/env bash
# Measures `scellis validate` and `scellis run --backend=cpu` on the ~200 MB document of
# bench/big_doc.py: CPU seconds (user + system) and peak RSS from GNU time.
#
# usage: bench/big_doc.sh [SCELLIS_BINARY] [ROWS]
set -euo pipefail
scellis=${1:-build/scellis}
rows=${2:-10240}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$(dirname "$0")/big_doc.py" "$rows" 1 >"$dir/big.json"
echo "document: $(stat -c %s "$dir/big.json") bytes"
measure() {
  local name=$1
  shift
  /usr/bin/time -f "%U %S %M %e" -o "$dir/time" "$@" >"$dir/out" 2>"$dir/err" || {
    echo "$name: exit $?" >&2
    cat "$dir/err" >&2
    return 1
  }
  read -r user sys rss wall <"$dir/time"
  echo "$name: cpu $(echo "$user + $sys" | bc) s (user $user, sys $sys), peak rss $((rss / 1024)) MiB, wall $wall s"
}
measure validate "$scellis" validate "$dir/big.json" --tier=prod
measure "run --backend=cpu" "$scellis" run "$dir/big.json" --tier=prod --backend=cpu --out "$dir/run.json"
