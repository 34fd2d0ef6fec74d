#!/usr/bin/env bash
# Copies Debian's OpenMPI (openmpi-bin, libopenmpi3, libpmix2) into DIST/mpi so that a machine
# without it can run `mpirun -np N scellis ...` from that folder alone: the launcher (orterun, as
# mpirun), orted and ompi_info; libmpi and the libraries it needs; the MCA plugins that work on one
# host (shared memory and TCP; not the InfiniBand, UCX, libfabric or PSM transports, whose
# libraries and drivers a GPU host need not have); the help texts and the parameter file; PMIx's
# plugins and help texts. DIST/mpi/env.sh points OpenMPI and PMIx at the copy (OPAL_PREFIX and
# each OPAL_*DIR / PMIX_*DIR, since Debian's libdir lies outside the prefix), and PATH and
# LD_LIBRARY_PATH at its bin/ and lib/. glibc is not copied: the host's is used, as by scellis.
#
# tools/check_mpi_bundle.sh proves the copy runs with the system's OpenMPI hidden.
#
# usage: tools/bundle_openmpi.sh [DIST]    (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:-dist}
OUT="$DIST/mpi"
ARCH_LIB=/usr/lib/x86_64-linux-gnu
OMPI_LIB=$ARCH_LIB/openmpi/lib
OMPI_PLUGINS=$OMPI_LIB/openmpi3
PMIX_ROOT=$ARCH_LIB/pmix2
command -v orterun >/dev/null && [ -d "$OMPI_PLUGINS" ] && [ -d "$PMIX_ROOT/lib/pmix" ] || {
  echo "bundle_openmpi: Debian's openmpi-bin and libpmix2 are not installed here" >&2
  exit 1
}

rm -rf "$OUT"
mkdir -p "$OUT"/{bin,lib,lib/openmpi,lib/pmix,share/openmpi,share/pmix,etc}

# Libraries a bundled file may need: OpenMPI's own, PMIx, hwloc, libevent and a few small system
# ones. A plugin needing anything else (a network transport's library) is left out.
allowed() {
  case "$(basename "$1")" in
    libmpi.so.* | libopen-rte.so.* | libopen-pal.so.* | libmca_common_sm.so.* | \
      libmca_common_ompio.so.* | libmca_common_monitoring.so.* | libpmix.so.* | libhwloc.so.* | \
      libevent_core-*.so.* | libevent_pthreads-*.so.* | libevent-*.so.* | libudev.so.* | \
      libz.so.* | libnuma.so.* | libatomic.so.* | libmunge.so.*) return 0 ;;
  esac
  return 1
}
# The host's C library, never copied.
from_glibc() {
  case "$(basename "$1")" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*.so.* | \
      libresolv.so.* | libutil.so.*) return 0 ;;
  esac
  return 1
}
# The libraries FILE needs (resolved paths), one per line.
needs() { ldd "$1" | awk '/=> \//{print $3}'; }
# True when every library FILE needs is glibc or allowed; copies the allowed ones into lib/.
take_needs() {
  local f=$1 dep
  for dep in $(needs "$f"); do
    from_glibc "$dep" && continue
    allowed "$dep" || return 1
  done
  for dep in $(needs "$f"); do
    from_glibc "$dep" && continue
    # The soname the loader asks for, as a real file (not a link into the system).
    cp -L "$dep" "$OUT/lib/$(basename "$dep")"
  done
}

for tool in orterun orted ompi_info; do
  cp -L "$(command -v $tool)" "$OUT/bin/$tool"
  take_needs "$OUT/bin/$tool" || { echo "bundle_openmpi: $tool needs an unexpected library" >&2; exit 1; }
done
ln -s orterun "$OUT/bin/mpirun"
ln -s orterun "$OUT/bin/mpiexec"
cp -L "$ARCH_LIB/libmpi.so.40" "$OUT/lib/"
take_needs "$OUT/lib/libmpi.so.40"

kept=0 left=()
for plugin in "$OMPI_PLUGINS"/*.so; do
  if take_needs "$plugin"; then
    cp -L "$plugin" "$OUT/lib/openmpi/"
    kept=$((kept + 1))
  else
    left+=("$(basename "$plugin" .so)")
  fi
done
for plugin in "$PMIX_ROOT"/lib/pmix/*.so; do
  take_needs "$plugin" && cp -L "$plugin" "$OUT/lib/pmix/" || left+=("$(basename "$plugin" .so)")
done
cp -L /usr/share/openmpi/* "$OUT/share/openmpi/" 2>/dev/null || true
cp -rL "$PMIX_ROOT"/share/pmix/. "$OUT/share/pmix/"
[ -f "$PMIX_ROOT/share/pmix-mca-params.conf" ] && cp "$PMIX_ROOT/share/pmix-mca-params.conf" "$OUT/etc/"
# Debian's parameters turn off the transports left out above; the bundle keeps that choice.
cp /etc/openmpi/openmpi-mca-params.conf "$OUT/etc/"
: >"$OUT/etc/openmpi-default-hostfile"

cat >"$OUT/env.sh" <<'EOF'
# Source this to run the OpenMPI copied beside it: `. dist/mpi/env.sh; mpirun -np 2 ...`.
_mpi_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$_mpi_root/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$_mpi_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$_mpi_root" OPAL_EXEC_PREFIX="$_mpi_root" OPAL_BINDIR="$_mpi_root/bin" \
  OPAL_SBINDIR="$_mpi_root/bin" OPAL_LIBEXECDIR="$_mpi_root/bin" OPAL_LIBDIR="$_mpi_root/lib" \
  OPAL_PKGLIBDIR="$_mpi_root/lib/openmpi" OPAL_DATAROOTDIR="$_mpi_root/share" \
  OPAL_DATADIR="$_mpi_root/share" OPAL_PKGDATADIR="$_mpi_root/share/openmpi" \
  OPAL_SYSCONFDIR="$_mpi_root/etc" OPAL_INCLUDEDIR="$_mpi_root/include" \
  OPAL_PKGINCLUDEDIR="$_mpi_root/include" OPAL_LOCALSTATEDIR="${TMPDIR:-/tmp}" \
  OPAL_SHAREDSTATEDIR="${TMPDIR:-/tmp}"
export PMIX_PREFIX="$_mpi_root" PMIX_LIBDIR="$_mpi_root/lib" PMIX_PKGLIBDIR="$_mpi_root/lib/pmix" \
  PMIX_DATAROOTDIR="$_mpi_root/share" PMIX_DATADIR="$_mpi_root/share" \
  PMIX_PKGDATADIR="$_mpi_root/share/pmix" PMIX_BINDIR="$_mpi_root/bin"
# The plugin folders, named outright as well (they are what a relocation most often misses).
export OMPI_MCA_mca_base_component_path="$_mpi_root/lib/openmpi"
export PMIX_MCA_mca_base_component_path="$_mpi_root/lib/pmix"
export OMPI_MCA_mca_base_param_files="$_mpi_root/etc/openmpi-mca-params.conf"
export OMPI_MCA_orte_default_hostfile="$_mpi_root/etc/openmpi-default-hostfile"
unset _mpi_root
EOF
echo "bundled OpenMPI $(orterun --version 2>/dev/null | head -1 | awk '{print $NF}') into $OUT:" \
  "$kept OpenMPI plugins ($(du -sh "$OUT" | cut -f1)); left out (a network transport's or OpenSHMEM's libraries):" \
  "${left[*]:-none}"
