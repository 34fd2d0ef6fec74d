// The part of @scellis/runtime (web/runtime, its own package) the Studio calls. The bundler
// resolves the module to the package's source; this declaration keeps the Studio's type check
// independent of the package's build.
declare module '@scellis/runtime' {
  export interface RuntimeTensor {
    shape: number[];
    dtype: string;
    data: ArrayLike<number>;
  }
  export interface RuntimeResult {
    outputs: Record<string, RuntimeTensor>;
    backend: string;
    executor: string;
    fallbackReason: string | null;
    stats?: unknown;
  }
  export interface RuntimeSession {
    run(feeds?: Record<string, unknown>): Promise<RuntimeResult>;
    download(name: string): Promise<RuntimeTensor>;
    dispose(): void;
  }
  export interface Runtime {
    backend: 'webgpu' | 'none';
    fallbackReason: string | null;
    adapterInfo: unknown;
    device?: { limits: Record<string, unknown> } | null;
    destroy?(): void;
    execute(program: unknown, feeds?: Record<string, unknown>, options?: { poisonOutputs?: boolean }): Promise<RuntimeResult>;
    prepare(program: unknown, options?: { feeds?: Record<string, unknown>; carry?: unknown }): Promise<RuntimeSession>;
  }
  export function createRuntime(options?: { allowSoftwareAdapter?: boolean; adapter?: unknown; gpu?: unknown }): Promise<Runtime> | Runtime;
}
