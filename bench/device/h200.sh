#!/usr/bin/env bash
# Runs Scellis on a lent NVIDIA H200 through Dawn on the Vulkan driver: probe, conformance in
# every tier, the examples, and the benchmarks given as arguments. Expects next to the tree:
#   .gl/          Debian's Vulkan loader and GL/EGL dispatch packages (libvulkan1, libegl1,
#                 libglvnd0, ...), which the NVIDIA Vulkan driver needs, unpacked into / here;
#   dist/         the scellis binaries built on Debian 12 (glibc and libstdc++ are forward
#                 compatible with the machine's image). `scellis` also links OpenMPI and the
#                 Studio server's cpp-httplib (with OpenSSL, brotli and zlib): where the image
#                 lacks them (an H100 image of 2026-12-07 lacked cpp-httplib), `ldd` names them:
#                 copied into dist/lib, with dist/scellis a wrapper that runs the real binary
#                 under LD_LIBRARY_PATH=dist/lib, so nothing else loads them (the benchmarks
#                 link neither);
#   node_modules/ the pinned Dawn package;
#   .data/        the Fashion-MNIST IDX files (for the training benchmark).
# Results go to $OUT/results.tar.gz (or ./out/results.tar.gz).
set -uo pipefail
FINAL=${OUT:-out}
# Everything lands in one folder, packed into one archive at the end (the transfer takes few files).
export OUT="$FINAL/r"
mkdir -p "$OUT"
export SCELLIS_FASHION_MNIST_DIR=${SCELLIS_FASHION_MNIST_DIR:-$PWD/.data/fashion-mnist}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SCELLIS_STORE="$OUT/store"
S=dist/scellis
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a "$OUT/gpu.txt"
"$S" probe | tee "$OUT/probe.txt"
"$S" probe --json > "$OUT/probe.json"
for f in examples/*.json; do
  echo "### $f"
  "$S" run "$f" --tier=prod
done 2>&1 | tee "$OUT/examples.txt"
if "$S" --help | grep -q conform; then
  for tier in prod debug; do
    "$S" conform --tier=$tier 2>&1 | tee "$OUT/conform_$tier.txt"
  done
fi
for cmd in "$@"; do
  echo "### $cmd"
  bash -c "$cmd"
done 2>&1 | tee "$OUT/extra.txt"
rm -rf "$OUT/store" "$OUT/init.safetensors"
tar -C "$FINAL" -czf "$FINAL/results.tar.gz" r && rm -rf "$OUT"
