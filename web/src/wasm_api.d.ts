// The part of @scellis/wasm-reference (web/wasm, its own package) the Studio calls: the engine's
// CPU reference compiled to WebAssembly, for a tab without a usable WebGPU adapter.
declare module '@scellis/wasm-reference' {
  export interface ReferenceResult {
    backend: string;
    executor: string;
    fallback_reason: string | null;
    outputs: Record<string, { shape: number[]; dtype: string; data: unknown }>;
    history?: Record<string, { shape: number[]; dtype: string; steps: unknown[] }>;
    stats?: Record<string, unknown>;
  }
  export interface Reference {
    version: string;
    run(
      documentText: string,
      options: { whyNoWebGPU: string; tier?: string; steps?: number; history?: string[]; bind?: Record<string, number>; budget?: number },
    ): ReferenceResult;
  }
  export class ScellisReferenceError extends Error {
    code: string;
    pointer: string | null;
    diagnostics: unknown[];
  }
  export function loadReference(options?: { wasmBinary?: ArrayBuffer }): Promise<Reference>;
}
