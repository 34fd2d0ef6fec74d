#!/usr/bin/env bash
# Fills DIR with the kept corpus of fuzz target NAME: the hand-written seeds in
# tools/fuzz/corpus/NAME/, the minimised corpus of the last long campaign in
# tools/fuzz/corpus/NAME.tar.xz (one archive, not thousands of small files in the tree) and, for
# the document loader, the examples and the documents that must fail.
#
# usage: tools/fuzz/seeds.sh NAME DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
name="${1:?usage: tools/fuzz/seeds.sh NAME DIR}"
dir="${2:?usage: tools/fuzz/seeds.sh NAME DIR}"
mkdir -p "$dir"
if [ -d "tools/fuzz/corpus/$name" ]; then cp -r "tools/fuzz/corpus/$name/." "$dir/"; fi
if [ -f "tools/fuzz/corpus/$name.tar.xz" ]; then tar -C "$dir" -xJf "tools/fuzz/corpus/$name.tar.xz"; fi
if [ "$name" = document ]; then cp examples/*.json tests/errors/*.json "$dir/"; fi
