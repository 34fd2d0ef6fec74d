#!/usr/bin/env bash
# Regenerates the golden rung dumps: for every examples/<case>.json,
#   scellis lower examples/<case>.json --tier=prod --dump-rungs tests/golden/<case>/
# and, for a workflow that trains on a dataset, or a run whose plan is red on one device (its one
# large matmul then cut into blocks), its WorkPlan over two ranks (5.workplan.txt):
#   scellis lower examples/<case>.json --tier=prod --to=workplan --ranks=2
# Examples that declare no memory budget are planned against a fixed 1 GiB (--budget=1G): the
# detected budget depends on the machine, and the dumps must not.
#
# usage: tools/regen_golden.sh [--out DIR] [--scellis BINARY] [CASE...]
#   --out DIR         write DIR/<case>/ instead of tests/golden/<case>/ (the golden test does this)
#   --scellis BINARY  the scellis binary (default: build/scellis)
#   CASE...           only these examples (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

out=tests/golden
scellis=build/scellis
cases=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --scellis) scellis="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) cases+=("$1"); shift ;;
  esac
done
if ((${#cases[@]} == 0)); then
  for f in examples/*.json examples/workplan/*.json; do cases+=("$(basename "$f" .json)"); done
fi
[ -x "$scellis" ] || { echo "regen_golden: no scellis binary at $scellis (build first)" >&2; exit 1; }

for c in "${cases[@]}"; do
  src="examples/$c.json"
  # examples/workplan/: documents that fit only split over ranks.
  [ -f "$src" ] || src="examples/workplan/$c.json"
  [ -f "$src" ] || { echo "regen_golden: no example $src" >&2; exit 1; }
  flags=(--tier=prod)
  if ! grep -q '"budget"' "$src"; then flags+=(--budget=1G); fi
  rm -rf "${out:?}/$c"
  "$scellis" lower "$src" "${flags[@]}" --dump-rungs "$out/$c/" >/dev/null
  # A workflow that trains on a dataset also has a WorkPlan: its step shared among 2 ranks.
  if grep -q '"type": "dataset"' "$src"; then
    "$scellis" lower "$src" "${flags[@]}" --to=workplan --ranks=2 > "$out/$c/5.workplan.txt"
  elif ! "$scellis" plan "$src" "${flags[@]}" >/dev/null 2>&1; then
    # Red on one device: a run's matmul in blocks over 2 ranks (fails loudly for any other graph).
    "$scellis" lower "$src" "${flags[@]}" --to=workplan --ranks=2 > "$out/$c/5.workplan.txt"
  fi
done
echo "regen_golden: ${#cases[@]} example(s) dumped under $out/"
