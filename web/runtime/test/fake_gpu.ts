// A recording stand-in for navigator.gpu: enough of the WebGPU API for the runtime, counting the
// encoders, submissions and maps a run makes and keeping every dispatch's bindings. Copies and
// queue writes move bytes, so reads return what was written; dispatches compute nothing.

export interface Counters {
  encoders: number;
  submits: number;
  maps: number;
  writes: number;
  dispatches: Array<{ pipeline: FakePipeline; bindings: Array<{ buffer: FakeBuffer; offset: number; size?: number }>; groups: number[] }>;
  buffers: FakeBuffer[];
}

// The usage and map-mode flags of the WebGPU spec, where the environment has none.
export function installGpuConstants(): void {
  const g = globalThis as Record<string, unknown>;
  g.GPUBufferUsage ??= { MAP_READ: 1, MAP_WRITE: 2, COPY_SRC: 4, COPY_DST: 8, INDEX: 16, VERTEX: 32, UNIFORM: 64, STORAGE: 128, INDIRECT: 256, QUERY_RESOLVE: 512 };
  g.GPUMapMode ??= { READ: 1, WRITE: 2 };
}

export class FakeBuffer {
  data: Uint8Array;
  destroyed = false;
  mapState = "unmapped";
  constructor(
    readonly size: number,
    readonly usage: number,
    readonly label: string | undefined,
    private readonly counters: Counters,
  ) {
    this.data = new Uint8Array(size);
  }
  async mapAsync(): Promise<void> {
    if (this.destroyed) throw new Error("mapAsync on a destroyed buffer");
    this.counters.maps++;
    this.mapState = "mapped";
  }
  getMappedRange(): ArrayBuffer {
    return this.data.buffer.slice(0) as ArrayBuffer;
  }
  unmap(): void {
    this.mapState = "unmapped";
  }
  destroy(): void {
    this.destroyed = true;
  }
}

export class FakePipeline {
  constructor(readonly label: string | undefined, readonly code: string) {}
  getBindGroupLayout(): object {
    return { pipeline: this };
  }
}

export interface FakeOptions {
  info?: Record<string, unknown>;
  limits?: Record<string, number>;
  features?: string[];
  failCompile?: boolean;
}

export const DEFAULT_LIMITS: Record<string, number> = {
  maxStorageBufferBindingSize: 134217728,
  maxBufferSize: 268435456,
  maxStorageBuffersPerShaderStage: 8,
  maxComputeWorkgroupsPerDimension: 65535,
  minStorageBufferOffsetAlignment: 256,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  maxComputeWorkgroupSizeY: 256,
  maxComputeWorkgroupSizeZ: 64,
};

export function fakeGpu(options: FakeOptions = {}) {
  installGpuConstants();
  const counters: Counters = { encoders: 0, submits: 0, maps: 0, writes: 0, dispatches: [], buffers: [] };
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const features = new Set(options.features ?? []);
  let failNextScope = false;
  const device = {
    limits,
    features,
    lost: new Promise(() => {}),
    queue: {
      writeBuffer(buffer: FakeBuffer, offset: number, data: ArrayBuffer, dataOffset = 0, size?: number) {
        counters.writes++;
        const bytes = new Uint8Array(data, dataOffset, size ?? data.byteLength - dataOffset);
        buffer.data.set(bytes, offset);
      },
      submit(commands: Array<{ run: () => void }>) {
        counters.submits++;
        for (const c of commands) c.run();
      },
      async onSubmittedWorkDone() {},
    },
    createBuffer(d: { size: number; usage: number; label?: string }) {
      const b = new FakeBuffer(d.size, d.usage, d.label, counters);
      counters.buffers.push(b);
      return b;
    },
    createShaderModule(d: { code: string }) {
      return { code: d.code, async getCompilationInfo() { return { messages: options.failCompile ? [{ type: "error", lineNum: 1, linePos: 2, message: "bad" }] : [] }; } };
    },
    async createComputePipelineAsync(d: { label?: string; compute: { module: { code: string } } }) {
      if (options.failCompile) throw new Error("compile failed");
      return new FakePipeline(d.label, d.compute.module.code);
    },
    createBindGroup(d: { layout: { pipeline: FakePipeline }; entries: Array<{ binding: number; resource: { buffer: FakeBuffer; offset: number; size?: number } }> }) {
      return { pipeline: d.layout.pipeline, bindings: d.entries.map((e) => e.resource) };
    },
    createCommandEncoder() {
      counters.encoders++;
      const recorded: Array<() => void> = [];
      return {
        beginComputePass() {
          let pipeline: FakePipeline | null = null;
          let group: { bindings: Array<{ buffer: FakeBuffer; offset: number; size?: number }> } | null = null;
          return {
            setPipeline(p: FakePipeline) { pipeline = p; },
            setBindGroup(_i: number, g: typeof group) { group = g; },
            dispatchWorkgroups(x: number, y = 1, z = 1) {
              counters.dispatches.push({ pipeline: pipeline!, bindings: [...group!.bindings], groups: [x, y, z] });
            },
            end() {},
          };
        },
        copyBufferToBuffer(src: FakeBuffer, so: number, dst: FakeBuffer, dOff: number, size: number) {
          recorded.push(() => dst.data.set(src.data.subarray(so, so + size), dOff));
        },
        finish() {
          return { run: () => recorded.forEach((r) => r()) };
        },
      };
    },
    pushErrorScope() {},
    async popErrorScope() {
      if (failNextScope) {
        failNextScope = false;
        return { message: "injected validation error" };
      }
      return null;
    },
    destroy() {},
  };
  const adapter = {
    info: options.info ?? { vendor: "acme", architecture: "rdna9", device: "Acme X1", description: "a hardware adapter", isFallbackAdapter: false },
    limits,
    features,
    async requestDevice() {
      return device;
    },
  };
  const gpu = {
    async requestAdapter() {
      return adapter;
    },
  };
  return {
    gpu: gpu as unknown as GPU,
    adapter: adapter as unknown as GPUAdapter,
    device,
    counters,
    failNextScope() {
      failNextScope = true;
    },
  };
}
