// The engine's CPU reference compiled to WebAssembly (@scellis/wasm-reference), loaded once per
// page and only when the tab has no usable WebGPU (the module is about a megabyte).
import { loadReference, type Reference } from '@scellis/wasm-reference';

let loading: Promise<Reference> | null = null;

export function getWasmReference(): Promise<Reference> {
  loading ??= loadReference();
  loading.catch(() => {
    loading = null; // a failed load may be retried
  });
  return loading;
}

// After a trap the instance refuses every run; the next call loads a fresh one.
export function dropWasmReference(): void {
  loading = null;
}
