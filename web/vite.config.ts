import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// The browser runtime is its own package in runtime/; the Studio compiles it from source so that
// one `npm ci && npm run build` here builds everything. Without it, the Studio still composes and
// inspects, and its run panel says that in-tab runs are not part of this build.
const runtimeEntry = ['runtime/src/index.ts', 'runtime/dist/index.js']
  .map(here)
  .find((p) => existsSync(p));

// The CPU reference compiled to WebAssembly (web/wasm, built by tools/build_wasm.sh): what runs in
// a tab without a usable WebGPU adapter. Without it the Studio says that nothing runs in the tab.
const wasmEntry = [here('wasm/dist/index.js')].find((p) => existsSync(p));

export default defineConfig({
  plugins: [react()],
  base: '/',
  resolve: {
    alias: {
      '@scellis/runtime': runtimeEntry ?? here('src/runtime_missing.ts'),
      '@scellis/wasm-reference': wasmEntry ?? here('src/wasm_missing.ts'),
    },
  },
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false },
  server: { proxy: { '/api': 'http://127.0.0.1:8737' } },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
