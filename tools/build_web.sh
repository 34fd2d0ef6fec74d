#!/usr/bin/env bash
# Builds the Studio's browser side when its sources changed since the last build: the runtime
# package (web/runtime/dist), the WebAssembly reference (web/wasm/dist, tools/build_wasm.sh) and
# the Studio itself (web/dist, which `scellis studio` serves). Expects tools/setup.sh test to have
# installed the npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# true when OUTPUT is missing or older than any file under the given sources
stale() {
  local output="$1"; shift
  [ -e "$output" ] || return 0
  [ -n "$(find "$@" -newer "$output" -type f -not -path '*/node_modules/*' -print -quit 2>/dev/null)" ]
}

if [ -f web/runtime/package.json ] && stale web/runtime/dist/index.js web/runtime/src web/runtime/package.json; then
  echo "web: building the runtime (web/runtime/dist)"
  npm --prefix web/runtime run --silent build
fi
if [ -f tools/build_wasm.sh ]; then bash tools/build_wasm.sh; fi
if stale web/dist/index.html web/src web/index.html web/package.json web/vite.config.ts \
    $( [ -d web/runtime/src ] && echo web/runtime/src ) $( [ -d web/wasm ] && echo web/wasm/dist ); then
  echo "web: building the Studio (web/dist)"
  npm --prefix web run --silent build >/dev/null
fi
