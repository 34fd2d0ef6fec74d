#!/usr/bin/env bash
# Proves that the OpenMPI copied by tools/bundle_openmpi.sh runs from its folder alone: in a
# private mount namespace the system's OpenMPI and PMIx are hidden (their folders replaced by empty
# ones, their programs and libraries by empty files), the environment is emptied (`env -i`) but
# for PATH and LD_LIBRARY_PATH naming the bundle first, and then
#   1. ompi_info reports the bundle's prefix and plugin folder;
#   2. `mpirun -np 2 scellis train --ranks=2` on the CPU reference gives the bits of one process
#      with the same chunks (checkpoint compared byte for byte);
#   3. under LD_DEBUG=files, no process of that run loads a file of the system's OpenMPI or PMIx.
# Needs root (or user namespaces) for the mount namespace; says so and stops otherwise.
#
# usage: tools/check_mpi_bundle.sh [BUILD] [DIST]    (defaults: build, dist)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
DIST=$(cd "${2:-dist}" && pwd)
[ -f "$DIST/mpi/env.sh" ] || { echo "no bundle in $DIST/mpi: run tools/bundle_openmpi.sh $DIST" >&2; exit 1; }

if [ "${SCELLIS_MPI_BUNDLE_HIDDEN:-}" != 1 ]; then
  if ! unshare -m --map-root-user true 2>/dev/null; then
    echo "check_mpi_bundle: cannot make a mount namespace here (needs root or user namespaces)" >&2
    exit 1
  fi
  exec unshare -m --map-root-user env SCELLIS_MPI_BUNDLE_HIDDEN=1 "$0" "$BUILD" "$DIST"
fi

# ---- inside the namespace: hide the system's OpenMPI and PMIx ----
# The mounts are private to this process tree, but the files under them are the system's: nothing
# here may write to the system's folders (ldconfig, say, would drop the soname links that point
# into the hidden folders, for every process, for good).
EMPTY_DIR=$(mktemp -d)
EMPTY_FILE=$(mktemp)
mounts=()
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
  /etc/openmpi; do
  [ -d "$d" ] && mount --bind "$EMPTY_DIR" "$d" && mounts+=("$d")
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info /usr/bin/mpirun.openmpi \
  /usr/lib/x86_64-linux-gnu/libmpi.so.40 /usr/lib/x86_64-linux-gnu/libopen-rte.so.40 \
  /usr/lib/x86_64-linux-gnu/libopen-pal.so.40 /usr/lib/x86_64-linux-gnu/libpmix.so.2 \
  /usr/lib/x86_64-linux-gnu/libhwloc.so.15 /usr/lib/x86_64-linux-gnu/libevent_core-2.1.so.7 \
  /usr/lib/x86_64-linux-gnu/libevent_pthreads-2.1.so.7; do
  real=$(readlink -f "$f" 2>/dev/null) || continue
  [ -f "$real" ] && mount --bind "$EMPTY_FILE" "$real" && mounts+=("$real")
done
echo "-- hid ${#mounts[@]} system OpenMPI/PMIx paths (the libraries are empty files now)"
fail() { echo "FAIL: $*" >&2; exit 1; }

TMP=$(mktemp -d)
run() {  # the emptied environment, the bundle first
  env -i HOME="$TMP" TMPDIR="$TMP" PATH="$DIST/mpi/bin:/usr/bin:/bin" \
    LD_LIBRARY_PATH="$DIST/mpi/lib" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
    SCELLIS_NO_RECORD=1 ${SCELLIS_FASHION_MNIST_DIR:+SCELLIS_FASHION_MNIST_DIR=$SCELLIS_FASHION_MNIST_DIR} \
    bash -c ". '$DIST/mpi/env.sh' && $*"
}

echo "-- the system's launcher is gone"
run "command -v mpirun" | grep -q "^$DIST/mpi/bin/mpirun$" || fail "mpirun is not the bundle's"
! /usr/bin/orterun --version >/dev/null 2>&1 || fail "the system's orterun still runs"

echo "-- ompi_info from the bundle"
run "ompi_info --path all" >"$TMP/info" 2>&1 || { cat "$TMP/info"; fail "ompi_info"; }
grep -E "Prefix:|Pkglibdir:" "$TMP/info" | sed 's/^ */   /'
grep -q "Prefix: $DIST/mpi" "$TMP/info" || fail "ompi_info's prefix is not the bundle"
run "ompi_info" 2>&1 | grep -q "MCA btl: vader" || fail "the shared-memory transport did not load"

echo "-- ldd: scellis and mpirun resolve MPI in the bundle"
for bin in "$BUILD/scellis" "$DIST/mpi/bin/orterun"; do
  run "ldd '$bin'" | grep -E "libmpi|libopen-|libpmix|libhwloc|libevent" >"$TMP/ldd" || true
  grep -v "$DIST/mpi/lib" "$TMP/ldd" && fail "$bin resolves an MPI library outside the bundle"
  [ -s "$TMP/ldd" ] || [ "$bin" != "$BUILD/scellis" ] || fail "scellis links no MPI"
done

echo "-- mpirun -np 2 scellis train --ranks=2 (CPU reference) equals one process, bit for bit"
TRAIN="train examples/fashion_mlp.json --backend=cpu --threads=1 --epochs 1 --max-steps 4 --chunks=2"
run "'$BUILD/scellis' $TRAIN --checkpoint '$TMP/one.safetensors'" >/dev/null 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "one process"; }
run "LD_DEBUG=files LD_DEBUG_OUTPUT='$TMP/ld' timeout 120 mpirun -np 2 --oversubscribe \
  '$BUILD/scellis' $TRAIN --ranks=2 --checkpoint '$TMP/two.safetensors'" >"$TMP/out" 2>"$TMP/err" ||
  { cat "$TMP/err"; fail "mpirun -np 2 from the bundle"; }
grep -q "data parallel: 2 ranks, 2 chunks" "$TMP/out" || fail "summary: $(cat "$TMP/out")"
cmp -s "$TMP/one.safetensors" "$TMP/two.safetensors" || fail "the checkpoints differ"
echo "   checkpoints identical"

echo "-- LD_DEBUG=files: what the job's processes loaded"
loads=$(cat "$TMP"/ld.* | grep -c "file=" || true)
processes=$(ls "$TMP"/ld.* | wc -l)
bundle=$(cat "$TMP"/ld.* | grep "file=" | grep -c "$DIST/mpi" || true)
echo "   $processes processes, $loads loads, $bundle from the bundle"
[ "$bundle" -gt 0 ] || fail "nothing was loaded from the bundle"
if cat "$TMP"/ld.* | grep "file=" | grep -E "/usr/lib/x86_64-linux-gnu/(openmpi|pmix2)|/(usr/)?lib/x86_64-linux-gnu/lib(mpi|open-rte|open-pal|pmix)\.so"; then
  fail "a process loaded the system's OpenMPI"
fi
echo "   nothing from the system's OpenMPI or PMIx"
for m in "${mounts[@]}"; do umount "$m"; done
rm -rf "$TMP" "$EMPTY_DIR" "$EMPTY_FILE"
echo "OK: the bundled OpenMPI runs alone"
