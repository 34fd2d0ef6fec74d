#!/usr/bin/env bash
# Start-up with a cold and a warm kernel cache on the H200 (Dawn on the NVIDIA Vulkan driver), by
# bench/kernel_cache/startup.py: device open + the compile of every pipeline of a plan, for an
# empty store, the same store again, and the cache turned off. Run inside bench/device/h200.sh
# (which unpacks .gl/, sets VK_DRIVER_FILES and uses dist/scellis), e.g.
#   bash bench/device/h200.sh "bash bench/kernel_cache/h200.sh"
#
# The NVIDIA driver keeps a shader cache of its own on disk (by default under ~/.cache/nvidia), so a
# second process can start warm without Scellis's cache. Two passes tell the two apart:
#   1. the driver's cache off (__GL_SHADER_DISK_CACHE=0): cold vs warm is what Scellis's cache
#      (Tint's SPIR-V and the VkPipelineCache data, which on NVIDIA holds the compiled code) saves;
#   2. the driver's cache on, in a fresh folder: what the driver's cache alone gives ("off" rows
#      after the first run) and what Scellis's adds on top of it.
# usage: bench/kernel_cache/h200.sh [SCELLIS_BINARY] [REPEATS]
set -uo pipefail
S=${1:-dist/scellis}
repeats=${2:-3}
here=$(dirname "$0")
# Documents that declare their determinism tier, with many pipelines each.
docs=(examples/pipelines/path_tracer.json examples/pipelines/bitonic_sort.json
      examples/pipelines/compaction.json examples/pipelines/canny.json)
status=0
echo "### driver shader cache off"
__GL_SHADER_DISK_CACHE=0 python3 "$here/startup.py" --scellis "$S" --repeats "$repeats" "${docs[@]}" ||
  status=1
echo "### driver shader cache on (fresh folder)"
driver_cache=$(mktemp -d)
trap 'rm -rf "$driver_cache"' EXIT
__GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$driver_cache" \
  __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \
  python3 "$here/startup.py" --scellis "$S" --repeats "$repeats" "${docs[@]}" || status=1
exit $status
