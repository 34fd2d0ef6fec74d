#!/usr/bin/env bash
# The main job: a showcase of the examples, each lowered and run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
S="$BUILD/scellis"
for f in examples/*.json; do
  echo "### $f"
  "$S" run "$f" --tier=prod
  echo
done
echo "### the center-columns sample, mid-ladder"
"$S" lower examples/center_columns.json --to=webir
echo
"$S" plan examples/center_columns.json
