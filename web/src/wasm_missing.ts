// Bundled in place of @scellis/wasm-reference only when web/wasm/dist was absent at build time:
// the Studio then has no in-tab fallback without WebGPU, and says so.
export class ScellisReferenceError extends Error {
  code = 'no-wasm-reference';
  pointer = null;
  diagnostics = [];
}
export function loadReference(): Promise<never> {
  return Promise.reject(new Error('this build of the Studio has no WebAssembly reference (web/wasm/dist was missing when it was built)'));
}
