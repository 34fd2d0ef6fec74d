#!/usr/bin/env bash
# Builds the CPU reference for WebAssembly (web/wasm/dist: scellis_reference.js + .wasm, an ES
# module factory, with the @scellis/wasm-reference package's own build beside it) when its sources
# changed since the last build. Installs nothing: tools/setup.sh test installs Debian's emscripten
# and the package's npm packages. Emscripten's CMake toolchain (emcmake) configures the project
# with SCELLIS_WASM=ON, which builds only the libraries the CPU reference's run path needs, in
# build-wasm/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SCELLIS_WASM_BUILD:-build-wasm}
DIST=web/wasm/dist

# true when OUTPUT is missing or older than any file under the given sources
stale() {
  local output="$1"; shift
  [ -e "$output" ] || return 0
  [ -n "$(find "$@" -newer "$output" -type f -not -path '*/node_modules/*' -print -quit 2>/dev/null)" ]
}

if stale "$DIST/scellis_reference.wasm" src apps/wasm CMakeLists.txt tools/build_wasm.sh; then
  for tool in emcmake em++; do
    command -v "$tool" >/dev/null || { echo "build_wasm: $tool is missing: run tools/setup.sh test" >&2; exit 1; }
  done
  echo "wasm: building the CPU reference for WebAssembly ($DIST)"
  start=$(date +%s)
  # Emscripten's JS optimizer needs acorn, which Debian installs where only Debian's node looks.
  export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
  if [ ! -f "$BUILD/build.ninja" ]; then
    # ccache, where there is one, keeps a clean build of unchanged sources quick.
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    emcmake cmake -S . -B "$BUILD" -G Ninja -DSCELLIS_WASM=ON -DCMAKE_BUILD_TYPE=Release \
      "${launcher[@]}" >/dev/null
  fi
  cmake --build "$BUILD" -j"${SCELLIS_JOBS:-$(nproc)}" --target scellis_reference
  mkdir -p "$DIST"
  cp "$BUILD/scellis_reference.js" "$BUILD/scellis_reference.wasm" "$DIST/"
  echo "wasm: built in $(( $(date +%s) - start )) s"
fi
if stale "$DIST/index.js" web/wasm/src web/wasm/package.json web/wasm/tsconfig.json; then
  echo "wasm: building @scellis/wasm-reference ($DIST)"
  npm --prefix web/wasm run --silent build
fi
