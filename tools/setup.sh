#!/usr/bin/env bash
# Installs what Scellis needs on Debian 12, idempotently: quiet when everything is already there.
#   tools/setup.sh main   what the main job needs: the compiler toolchain and libraries the engine
#                         binary links, the Vulkan loader, the dataset, Dawn
#   tools/setup.sh test   that, plus what only the tests need: GoogleTest, clang and libFuzzer,
#                         chromium (its SwiftShader driver runs the GPU tests), Emscripten (the
#                         WebAssembly reference), OpenMPI (data-parallel training), PyTorch
#                         (the peer)
set -euo pipefail
cd "$(dirname "$0")/.."
PART=${1:-test}
case "$PART" in
  main|test) ;;
  *) echo "usage: tools/setup.sh main|test" >&2; exit 2 ;;
esac

APT_PACKAGES=(build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libcpp-httplib-dev  # the Studio server (`scellis studio`)
  libvulkan1          # the Vulkan loader Dawn needs
  dataset-fashion-mnist
  nodejs npm)
if [ "$PART" = test ]; then
  APT_PACKAGES+=(libgtest-dev libbenchmark-dev
    ccache              # the Python package's build (pip install .) compiles through it
    clang clang-format libclang-rt-14-dev
    chromium            # ships the SwiftShader Vulkan driver the GPU tests run on
    emscripten          # the CPU reference compiled to WebAssembly (tools/build_wasm.sh)
    openmpi-bin libopenmpi-dev  # data-parallel training over MPI (mpirun -np 2 in the tests)
    python3 python3-pip python3-venv)
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine may carry its own node/npm/python outside apt; do not fight it.
filtered=()
for p in "${missing[@]}"; do
  case "$p" in
    nodejs|npm) command -v "${p/nodejs/node}" >/dev/null || filtered+=("$p") ;;
    python3|python3-pip|python3-venv) command -v python3 >/dev/null || filtered+=("$p") ;;
    *) filtered+=("$p") ;;
  esac
done
if ((${#filtered[@]})); then
  echo "setup: installing ${filtered[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${filtered[@]}" >/dev/null
fi

# Dawn (WebGPU) comes from a pinned npm package; package-lock.json holds its integrity hash.
if [ -f package-lock.json ] && [ ! -f node_modules/.package-lock.json ]; then
  echo "setup: installing Dawn from npm"
  npm ci --silent --no-audit --no-fund >/dev/null
fi

[ "$PART" = test ] || exit 0

# A project-local virtual environment. The Python package's pinned build tools come first (the
# other installs below then find what they share with them, e.g. `packaging`, already there).
[ -x .venv/bin/python ] || python3 -m venv .venv
if ! .venv/bin/python -c "import nanobind, scikit_build_core, sys; \
    sys.exit(nanobind.__version__ != '3.1.0' or scikit_build_core.__version__ != '1.1.2')" 2>/dev/null; then
  echo "setup: installing nanobind and scikit-build-core into .venv"
  .venv/bin/pip install -q --disable-pip-version-check nanobind==3.1.0 scikit-build-core==1.1.2
fi
# The CPU peer for agreement tests and benchmarks, PyTorch (the default wheel; it runs on the CPU
# here), with numpy and pytest, then gguf (its own dequantizer is the independent oracle for the
# q4_k and q6_k blocks). About 4.7 GB to fetch and unpack, which waits on the network and the disk:
# it installs in the background while the Python package below compiles, and setup waits for it.
peers_pid=
if ! .venv/bin/python -c "import torch, numpy, pytest, gguf" 2>/dev/null; then
  echo "setup: installing PyTorch 2.11.0, numpy, pytest and gguf 0.19.0 into .venv (a few minutes, once)"
  { .venv/bin/pip install -q --disable-pip-version-check torch==2.11.0 numpy pytest &&
    .venv/bin/pip install -q --disable-pip-version-check gguf==0.19.0; } > .venv/peers-install.log 2>&1 &
  peers_pid=$!
fi

# The Python package (pyproject.toml: python/scellis and the nanobind module python/src):
# `pip install .` whenever a source is newer than the last install. The build directory
# (build/python) persists, so a reinstall compiles only what changed. Its one dependency, numpy,
# comes with PyTorch above (--no-deps: no second pip installs it beside that one).
PY_STAMP=build/python/.installed
if [ ! -f "$PY_STAMP" ] ||
   [ -n "$(find python src CMakeLists.txt pyproject.toml -newer "$PY_STAMP" -print -quit)" ] ||
   ! .venv/bin/python -c "import scellis" 2>/dev/null; then
  echo "setup: building and installing the Python package into .venv (pip install .)"
  # The compiler CMake picks for the C++ build (c++, unless CXX says otherwise), not the one
  # Python was built with: same command lines, so ccache serves the engine to the second build.
  CXX="${CXX:-c++}" .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps .
  touch "$PY_STAMP"
fi
if [ -n "$peers_pid" ] && ! wait "$peers_pid"; then
  cat .venv/peers-install.log
  echo "setup: installing PyTorch, numpy, pytest or gguf failed (above)" >&2
  exit 1
fi

# The Studio's front end, its browser runtime and the browser tests: each web package installs
# its pinned packages (its package-lock.json) once, and again only when the lock changes.
for pkg in web web/runtime web/wasm; do
  [ -f "$pkg/package-lock.json" ] || continue
  if [ ! -f "$pkg/node_modules/.package-lock.json" ] ||
     [ "$pkg/package-lock.json" -nt "$pkg/node_modules/.package-lock.json" ]; then
    echo "setup: installing the npm packages of $pkg"
    npm ci --prefix "$pkg" --silent --no-audit --no-fund >/dev/null
  fi
done
