// The browser runtime: executes a Scellis device program through WebGPU the way the native
// backend does — buffers as planned, every dispatch of a run in one command encoder and one queue
// submission, every value read back through one staging buffer mapped once (a program's `repeat`
// records its body's dispatches repeat / iterations_per_dispatch times per step, its hoisted ones
// once). Carried values ping-pong: after an iteration, a carried output's buffer and its input's
// buffer swap roles, so no iteration copies state. A run's watched values gather in one history
// buffer: a value its kernel can write into its slot (the program says which) is, in every step
// but the last, and the rest are copied there; the history, the fed inputs' staging and the
// read-back buffer are kept for the session's next run of the same size. Software adapters (SwiftShader, lavapipe, a fallback adapter) are
// not a GPU: the runtime reports backend "none" for them unless asked to take one.

import { ScellisRuntimeError, type ScellisRuntimeErrorCode } from "./errors.js";
import { base64ToBytes, type DeviceProgram, type ProgramInput, type ProgramOutput, parseProgram } from "./program.js";
import { decode, elementCount, type Feeds, feedBytes, type FeedValue, type Tensor } from "./tensor.js";

export interface RuntimeOptions {
  // Take a software adapter (adapter info says cpu, SwiftShader, llvmpipe, lavapipe, or a fallback
  // adapter) when no hardware one is offered. Tests set it; users opt in.
  allowSoftwareAdapter?: boolean;
  // Use this adapter rather than requesting one.
  adapter?: GPUAdapter;
  // Where to request an adapter (default: navigator.gpu). Under Node: the `webgpu` package's create([]).
  gpu?: GPU;
  powerPreference?: GPUPowerPreference;
}

export interface AdapterInfoReport {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  type: string | null; // "discrete GPU", "integrated GPU", "CPU", ... where the browser says
  isFallbackAdapter: boolean;
  isSoftware: boolean;
  softwareReason: string | null;
}

export interface RunStats {
  steps: number;
  dispatches: number;
  // Watched values copied into the run's history (a value its kernel writes into its slot is
  // copied in the last step only), as the native run counts them; the read-back's one copy of the
  // whole history and poisoned outputs' fills apart.
  copies: number;
  submissions: number;
  maps: number;
  pipelinesCompiled: number;
  bytesUploaded: number;
  readbackBytes: number;
  // Buffers the run allocated: its feed staging, history and read-back buffers when the session
  // kept none of their sizes from an earlier run.
  buffersCreated: number;
  wallMs: number;
}

export interface RunResult {
  outputs: Record<string, Tensor>;
  backend: "webgpu";
  executor: "fused-encoder";
  fallbackReason: null;
  stats: RunStats;
}

export interface StepsResult {
  // For each watched name, its value after every step of the run, in step order.
  watched: Record<string, Tensor[]>;
  backend: "webgpu";
  executor: "fused-encoder";
  fallbackReason: null;
  stats: RunStats;
}

export interface PrepareOptions {
  // Starting values by input or param name: a param's feed replaces its initializer, a carried
  // input's feed is its first value, an inline input's feed replaces its data.
  feeds?: Feeds;
  // true (default): the program's carries ping-pong between steps; false: none do (every step
  // starts from the sources); a list adds carries of named outputs into inputs to the program's.
  carry?: boolean | Array<{ from: string; to: string }>;
  // Before each dispatch, fill the range it writes with POISON_BITS, so an element a kernel fails
  // to write reads back as the sentinel (conformance uses it). Each dispatch then gets its own
  // compute pass; it is still one encoder and one submission.
  poisonOutputs?: boolean;
}

// The bit pattern poisoned outputs are filled with: the engine's sentinel, a quiet NaN no kernel
// computes.
export const POISON_BITS = 0x7fc0dead;

export interface RunStepsOptions {
  // One entry per step: the feeds of the inputs fed every step (and, in the first run, of carried
  // inputs that have no value yet).
  feedsPerStep?: Feeds[];
  // Outputs (or inputs) whose value after every step is read back; default: every output.
  watch?: string[];
}

const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|softpipe/i;

function adapterReport(adapter: GPUAdapter): AdapterInfoReport {
  const info = ((adapter as { info?: GPUAdapterInfo }).info ?? {}) as Partial<GPUAdapterInfo> & {
    type?: string;
    isFallbackAdapter?: boolean;
  };
  const fallback = Boolean(info.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter);
  const r: AdapterInfoReport = {
    vendor: info.vendor ?? "",
    architecture: info.architecture ?? "",
    device: info.device ?? "",
    description: info.description ?? "",
    type: info.type ?? null,
    isFallbackAdapter: fallback,
    isSoftware: false,
    softwareReason: null,
  };
  const named = [r.vendor, r.architecture, r.device, r.description].map((s) => SOFTWARE_NAMES.exec(s)?.[0]).find(Boolean);
  if (named) r.softwareReason = `the adapter is ${named}, a software rasterizer`;
  else if (r.type && /cpu/i.test(r.type)) r.softwareReason = `the adapter's type is "${r.type}"`;
  else if (fallback) r.softwareReason = "the adapter is a fallback adapter (software)";
  r.isSoftware = r.softwareReason !== null;
  return r;
}

// Limits worth the adapter's own value rather than WebGPU's defaults (tensors over 128 MiB,
// kernels binding many buffers).
const REQUESTED_LIMITS = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeWorkgroupsPerDimension",
] as const;

// Opens the best adapter there is (or the one given) and says what was chosen, or why nothing was.
// Never throws for a missing or refused adapter: the runtime's backend is then "none".
export async function createRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  let adapter = options.adapter ?? null;
  const gpu = options.gpu ?? (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (!adapter) {
    if (!gpu) return new Runtime(null, null, "this environment has no WebGPU (navigator.gpu is missing)");
    try {
      adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? "high-performance" });
    } catch (e) {
      return new Runtime(null, null, `requestAdapter failed: ${(e as Error).message}`);
    }
    if (!adapter) return new Runtime(null, null, "no WebGPU adapter is available (requestAdapter returned null)");
  }
  const info = adapterReport(adapter);
  if (info.isSoftware && !options.allowSoftwareAdapter) {
    return new Runtime(null, info, `${info.softwareReason}; a software adapter is not a GPU (allowSoftwareAdapter takes it)`);
  }
  const requiredLimits: Record<string, number> = {};
  for (const key of REQUESTED_LIMITS) {
    const v = (adapter.limits as unknown as Record<string, number | undefined>)[key];
    if (typeof v === "number") requiredLimits[key] = v;
  }
  const requiredFeatures: GPUFeatureName[] = adapter.features.has("shader-f16") ? ["shader-f16"] : [];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  } catch (e) {
    return new Runtime(null, info, `requestDevice failed: ${(e as Error).message}`);
  }
  return new Runtime(device, info, null, [gpu, adapter]);
}

export class Runtime {
  readonly backend: "webgpu" | "none";
  readonly fallbackReason: string | null;
  readonly adapterInfo: AdapterInfoReport | null;
  readonly device: GPUDevice | null;
  #lost: ScellisRuntimeError | null = null;
  // The GPU object and adapter the device came from, held for the device's lifetime: under Node,
  // Dawn's instance goes away with its last reference, and pending callbacks (pipeline creation,
  // maps) would then never settle.
  readonly #keepAlive: unknown[];

  constructor(device: GPUDevice | null, info: AdapterInfoReport | null, fallbackReason: string | null, keepAlive: unknown[] = []) {
    this.#keepAlive = keepAlive;
    this.device = device;
    this.adapterInfo = info;
    this.backend = device ? "webgpu" : "none";
    this.fallbackReason = device ? null : fallbackReason;
    device?.lost.then((l) => {
      this.#lost = new ScellisRuntimeError("device-lost", `the WebGPU device was lost (${l.reason}): ${l.message}`);
    });
  }

  // The error that made the device unusable, if any.
  get lostError(): ScellisRuntimeError | null {
    return this.#lost;
  }

  #usableDevice(): GPUDevice {
    if (!this.device) {
      throw new ScellisRuntimeError("no-webgpu", `no usable WebGPU adapter: ${this.fallbackReason}`);
    }
    if (this.#lost) throw this.#lost;
    return this.device;
  }

  // Runs the program once: every input without inline data must be fed; feeds for params and
  // inline inputs replace their starting values. Every output is read back.
  async execute(program: DeviceProgram | unknown, feeds: Feeds = {}, options: { poisonOutputs?: boolean } = {}): Promise<RunResult> {
    const p = parseProgram(program);
    const start = performance.now();
    const stepNames = new Set(p.inputs.filter((i) => i.fed).map((i) => i.name));
    const startFeeds: Feeds = {};
    const stepFeeds: Feeds = {};
    for (const [name, value] of Object.entries(feeds)) (stepNames.has(name) ? stepFeeds : startFeeds)[name] = value;
    const session = await this.prepare(p, { feeds: startFeeds, poisonOutputs: options.poisonOutputs ?? false });
    try {
      const r = await session.run(stepFeeds);
      r.stats.pipelinesCompiled = session.pipelinesCompiled;
      r.stats.bytesUploaded += session.bytesUploadedAtPrepare;
      r.stats.wallMs = performance.now() - start;
      return r;
    } finally {
      session.dispose();
    }
  }

  // Makes the program resident: buffers allocated, sources written, pipelines compiled once.
  async prepare(program: DeviceProgram | unknown, options: PrepareOptions = {}): Promise<Session> {
    const device = this.#usableDevice();
    const p = parseProgram(program);
    const s = new Session(this, device, p, options);
    await s.init(options.feeds ?? {});
    return s;
  }

  // Releases the device; the runtime cannot run anything afterwards.
  destroy(): void {
    this.device?.destroy();
    this.#keepAlive.length = 0;
  }
}

function roundUp(n: number, multiple: number): number {
  return Math.ceil(n / multiple) * multiple;
}

let nextBufferUid = 1;
const bufferUid = new WeakMap<GPUBuffer, number>();
function uidOf(b: GPUBuffer): number {
  let id = bufferUid.get(b);
  if (id === undefined) {
    id = nextBufferUid++;
    bufferUid.set(b, id);
  }
  return id;
}

interface Carry {
  fromBuffer: number;
  toBuffer: number;
}

// A program buffer's per-step slots in a run's buffer (a fed input's staging, or the history of
// watched values): step k's at first + k * stride, bound `size` bytes where the program binds the
// whole buffer.
interface Slots {
  buffer: GPUBuffer | null; // the history's, once allocated
  first: number;
  stride: number;
  size: number;
}

// A program resident on the device. Not safe for concurrent calls: await each before the next.
export class Session {
  readonly program: DeviceProgram;
  pipelinesCompiled = 0;
  bytesUploadedAtPrepare = 0;
  readonly #runtime: Runtime;
  readonly #device: GPUDevice;
  readonly #owned: GPUBuffer[] = [];
  #phys: GPUBuffer[] = [];
  readonly #pipelines: GPUComputePipeline[] = [];
  readonly #layouts: GPUBindGroupLayout[] = [];
  readonly #bindGroups = new Map<string, GPUBindGroup>();
  readonly #carries: Carry[] = [];
  readonly #pendingCarried = new Set<string>(); // carried inputs with no value yet
  #disposed = false;
  #poison: ScellisRuntimeError | null = null;
  #poisonFill: GPUBuffer | null = null; // POISON_BITS, as large as the largest range a dispatch writes
  readonly #poisonOutputs: boolean;
  // Runs' feed staging, history and read-back buffers, kept for the next run of the same size:
  // the free ones by usage and size, and every one, destroyed with the session.
  readonly #pool = new Map<string, GPUBuffer[]>();
  readonly #pooled = new Set<GPUBuffer>();
  #buffersCreated = 0;

  constructor(runtime: Runtime, device: GPUDevice, program: DeviceProgram, options: PrepareOptions) {
    this.#runtime = runtime;
    this.#device = device;
    this.program = program;
    this.#poisonOutputs = options.poisonOutputs ?? false;
    const carry = options.carry ?? true;
    if (carry !== false) {
      for (const c of program.carries) this.#carries.push({ fromBuffer: c.from_buffer, toBuffer: c.to_buffer });
    }
    if (Array.isArray(carry)) {
      for (const c of carry) {
        const out = program.outputs.find((o) => o.name === c.from);
        const input = program.inputs.find((i) => i.name === c.to);
        if (!out || !input) {
          throw new ScellisRuntimeError("bad-carry", `a carry from "${c.from}" to "${c.to}" needs an output and an input of those names`);
        }
        if (out.dtype !== input.dtype || out.shape.join() !== input.shape.join() || out.buffer === input.buffer) {
          throw new ScellisRuntimeError("bad-carry", `the output "${c.from}" ([${out.shape}] ${out.dtype}) cannot feed the input "${c.to}" ([${input.shape}] ${input.dtype})`);
        }
        if (this.#carries.some((k) => k.toBuffer === input.buffer || k.fromBuffer === out.buffer)) {
          throw new ScellisRuntimeError("bad-carry", `the input "${c.to}" or the output "${c.from}" is already carried`);
        }
        this.#carries.push({ fromBuffer: out.buffer, toBuffer: input.buffer });
      }
    }
    for (const i of program.inputs) {
      if (this.#isCarriedInput(i) && !i.initial) this.#pendingCarried.add(i.name);
    }
  }

  // The ranges a dispatch writes: its last `writes` bindings (the kernel's outputs), each rounded
  // up to 4 bytes.
  #writtenRanges(ds: {
    bindings: Array<{buffer: number; offset: number; size: number}>;
    writes?: number
  }): Array<{buffer: number; offset: number; size: number}> {
    return ds.bindings.slice(ds.bindings.length - (ds.writes ?? 1)).map((b) => {
      const size = b.size || this.program.buffers[b.buffer]!.size - b.offset;
      return {buffer: b.buffer, offset: b.offset, size: roundUp(size, 4)};
    });
  }

  #isCarriedInput(i: ProgramInput): boolean {
    return this.#carries.some((c) => c.toBuffer === i.buffer);
  }
  // Inputs that need a feed every step: no starting value and not carried.
  #isStepFed(i: ProgramInput): boolean {
    return i.role === "input" && !i.initial && !this.#isCarriedInput(i);
  }

  // Checks the program against the device's limits, then allocates, uploads and compiles.
  async init(feeds: Feeds): Promise<void> {
    const d = this.#device;
    const p = this.program;
    const lim = d.limits;
    const over = (what: string) => {
      throw new ScellisRuntimeError(
        "program-over-device-limits",
        `${what}; the program was laid out for a ${p.limits.max_storage_buffer_binding_size}-byte binding cap`,
        "ask the engine for the program with this device's limits",
      );
    };
    for (const b of p.buffers) if (b.size > lim.maxBufferSize) over(`buffer ${b.id} is ${b.size} bytes, over the device's maxBufferSize ${lim.maxBufferSize}`);
    for (const ds of p.dispatches) {
      if (ds.bindings.length > lim.maxStorageBuffersPerShaderStage) over(`${ds.kernel} binds ${ds.bindings.length} storage buffers, the device allows ${lim.maxStorageBuffersPerShaderStage}`);
      for (const w of ds.workgroups) if (w > lim.maxComputeWorkgroupsPerDimension) over(`${ds.kernel} dispatches ${w} workgroups in one dimension`);
      for (const b of ds.bindings) {
        const size = b.size || p.buffers[b.buffer]!.size - b.offset;
        if (size > lim.maxStorageBufferBindingSize) over(`${ds.kernel} binds ${size} bytes, over the device's binding cap ${lim.maxStorageBufferBindingSize}`);
        if (b.offset % lim.minStorageBufferOffsetAlignment) over(`${ds.kernel} binds at offset ${b.offset}, not a multiple of the device's ${lim.minStorageBufferOffsetAlignment}`);
      }
    }
    if (p.pipelines.some((pl) => /\benable\s+f16\s*;/.test(pl.wgsl)) && !d.features.has("shader-f16")) {
      throw new ScellisRuntimeError("shader-f16-unavailable", "the program stores f16 values and the device has no shader-f16 feature", "declare them f32, or use an adapter with shader-f16");
    }

    // Feeds are checked before anything is allocated.
    const starting = new Map<number, Uint8Array>();
    for (const [name, value] of Object.entries(feeds)) {
      const input = this.#input(name);
      if (this.#isStepFed(input)) {
        throw new ScellisRuntimeError("bad-feed", `the input "${name}" is fed every step, not at prepare`, "pass it to run() or runSteps()");
      }
      starting.set(input.buffer, feedBytes(name, value, input.shape, input.dtype));
      this.#pendingCarried.delete(name);
    }

    for (const b of p.buffers) {
      const buf = d.createBuffer({ size: b.size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: `b${b.id}` });
      this.#owned.push(buf);
    }
    this.#phys = [...this.#owned];
    for (const s of p.sources) {
      if (!starting.has(s.buffer)) this.#write(this.#owned[s.buffer]!, 0, base64ToBytes(s.data), true);
    }
    for (const [buffer, bytes] of starting) this.#write(this.#owned[buffer]!, 0, bytes, true);
    if (this.#poisonOutputs) {
      const largest =
          Math.max(4, ...p.dispatches.flatMap((ds) => this.#writtenRanges(ds).map((r) => r.size)));
      const fill = new Uint32Array(largest / 4).fill(POISON_BITS);
      this.#poisonFill = d.createBuffer({ size: largest, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label: "poison" });
      this.#owned.push(this.#poisonFill);
      this.#write(this.#poisonFill, 0, new Uint8Array(fill.buffer), true);
    }

    for (const pl of p.pipelines) {
      d.pushErrorScope("validation");
      const module = d.createShaderModule({ code: pl.wgsl, label: pl.kernel });
      let pipeline: GPUComputePipeline;
      try {
        pipeline = await d.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: pl.entry_point }, label: pl.kernel });
      } catch (e) {
        await d.popErrorScope();
        const messages = (await module.getCompilationInfo()).messages
          .filter((m) => m.type === "error")
          .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
        this.dispose();
        if (messages.length) throw new ScellisRuntimeError("wgsl-compile-error", `kernel ${pl.kernel}: ${messages.join("; ")}`, null, { cause: e });
        throw new ScellisRuntimeError("pipeline-creation-failed", `kernel ${pl.kernel}: ${(e as Error).message}`, null, { cause: e });
      }
      const err = await d.popErrorScope();
      if (err) {
        this.dispose();
        throw new ScellisRuntimeError("wgsl-compile-error", `kernel ${pl.kernel}: ${err.message}`);
      }
      this.#pipelines.push(pipeline);
      this.#layouts.push(pipeline.getBindGroupLayout(0));
      this.pipelinesCompiled++;
    }
  }

  #write(buffer: GPUBuffer, offset: number, bytes: Uint8Array, atPrepare = false): number {
    // The queue writes whole words; a 2-byte dtype of odd length ends mid-word.
    let data = bytes;
    if (data.byteLength % 4) {
      data = new Uint8Array(roundUp(bytes.byteLength, 4));
      data.set(bytes);
    }
    if (data.byteLength) this.#device.queue.writeBuffer(buffer, offset, data.buffer, data.byteOffset, data.byteLength);
    if (atPrepare) this.bytesUploadedAtPrepare += data.byteLength;
    return data.byteLength;
  }

  #input(name: string): ProgramInput {
    const input = this.program.inputs.find((i) => i.name === name);
    if (!input) {
      const known = this.program.inputs.map((i) => i.name).join(", ");
      throw new ScellisRuntimeError("bad-feed", `the feed "${name}" names no input or param`, known ? `inputs: ${known}` : "the program has no inputs");
    }
    return input;
  }

  #named(name: string): { output?: ProgramOutput; input?: ProgramInput; bytes: number } {
    const output = this.program.outputs.find((o) => o.name === name);
    if (output) return { output, bytes: output.bytes };
    const input = this.program.inputs.find((i) => i.name === name);
    if (input) return { input, bytes: input.bytes };
    const known = this.program.outputs.map((o) => o.name).join(", ");
    throw new ScellisRuntimeError("unknown-output", `no output or input is named "${name}"`, known ? `outputs: ${known}` : null);
  }

  #usable(): void {
    if (this.#disposed) throw new ScellisRuntimeError("session-disposed", "the session was disposed");
    if (this.#poison) throw new ScellisRuntimeError("session-poisoned", `the session failed earlier and cannot run: ${this.#poison.message}`, "dispose it and prepare the program again", { cause: this.#poison });
    const lost = this.#runtime.lostError;
    if (lost) {
      this.#poison = lost;
      throw lost;
    }
  }

  #bindGroup(pipeline: number, entries: Array<{ buffer: GPUBuffer; offset: number; size: number }>): GPUBindGroup {
    let key = String(pipeline);
    for (const e of entries) key += `|${uidOf(e.buffer)}:${e.offset}:${e.size}`;
    let g = this.#bindGroups.get(key);
    if (!g) {
      g = this.#device.createBindGroup({
        layout: this.#layouts[pipeline]!,
        entries: entries.map((e, i) => ({ binding: i, resource: e.size ? { buffer: e.buffer, offset: e.offset, size: e.size } : { buffer: e.buffer, offset: e.offset } })),
      });
      this.#bindGroups.set(key, g);
    }
    return g;
  }

  // One step with `feeds` (the inputs fed every step); every output is read back.
  async run(feeds: Feeds = {}): Promise<RunResult> {
    const names = this.program.outputs.map((o) => o.name);
    const r = await this.runSteps(1, { feedsPerStep: [feeds], watch: names });
    const outputs: Record<string, Tensor> = {};
    for (const n of names) outputs[n] = r.watched[n]![0]!;
    return { outputs, backend: "webgpu", executor: "fused-encoder", fallbackReason: null, stats: r.stats };
  }

  // `n` steps (1 to the program's max_steps_per_submission) in one submission; the watched values
  // after every step come back through one staging buffer mapped once.
  async runSteps(n: number, options: RunStepsOptions = {}): Promise<StepsResult> {
    this.#usable();
    const p = this.program;
    const start = performance.now();
    if (!Number.isInteger(n) || n < 1 || n > p.max_steps_per_submission) {
      throw new ScellisRuntimeError("bad-step-count", `a run takes 1 to ${p.max_steps_per_submission} steps, got ${n}`, "split longer runs into several calls");
    }
    const watch = options.watch ?? p.outputs.map((o) => o.name);
    const watched = watch.map((name) => ({ name, ...this.#named(name) }));
    const feedsPerStep = options.feedsPerStep ?? [];
    if (feedsPerStep.length > n) {
      throw new ScellisRuntimeError("bad-feed", `feedsPerStep has ${feedsPerStep.length} entries for ${n} steps`);
    }

    // Check every feed before any device work.
    const fed = p.inputs.filter((i) => this.#isStepFed(i));
    const slots = new Map<number, { bytes: Uint8Array[]; size: number }>(); // by buffer
    for (const i of fed) slots.set(i.buffer, { bytes: [], size: Math.max(roundUp(i.bytes, 4), 4) });
    const first = new Map<number, Uint8Array>(); // carried inputs' first values, by buffer
    for (let k = 0; k < n; k++) {
      const step = feedsPerStep[k] ?? {};
      for (const [name, value] of Object.entries(step)) {
        const input = this.#input(name);
        if (this.#isStepFed(input)) continue;
        if (k === 0 && this.#pendingCarried.has(name)) first.set(input.buffer, feedBytes(name, value, input.shape, input.dtype));
        else throw new ScellisRuntimeError("bad-feed", `the input "${name}" is not fed per step (it is ${input.carried || this.#isCarriedInput(input) ? "carried" : "a starting value"})`, "give starting values to prepare()");
      }
      for (const i of fed) {
        const value = step[i.name];
        if (value === undefined) {
          throw new ScellisRuntimeError("missing-input-data", `the input "${i.name}" has no data and no feed${n > 1 ? ` at step ${k}` : ""}`, "feed it in every step's feeds");
        }
        slots.get(i.buffer)!.bytes.push(feedBytes(i.name, value, i.shape, i.dtype));
      }
    }
    for (const name of this.#pendingCarried) {
      const input = this.#input(name);
      if (!first.has(input.buffer)) {
        throw new ScellisRuntimeError("missing-input-data", `the carried input "${name}" has no value yet`, "feed its first value in the first step's feeds or at prepare()");
      }
    }

    const d = this.#device;
    // The run's staging and history buffers come from the session's pools and go back to them.
    const taken: Array<{ buffer: GPUBuffer; key: string }> = [];
    const createdBefore = this.#buffersCreated;
    const take = (usage: number, size: number, label: string) => {
      const b = this.#takePooled(usage, size, label);
      taken.push(b);
      return b.buffer;
    };
    let uploaded = 0;
    let dispatches = 0;
    let copies = 0;
    d.pushErrorScope("internal");
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    let mapped: Uint8Array | null = null;
    // Every watched value of every step goes into one history buffer, so one copy and one map read
    // it all back: watched value i of step k at layout[i].at + k * layout[i].slot.
    let historyBytes = 0;
    const layout: Array<{ at: number; slot: number; direct: boolean }> = [];
    try {
      for (const [buffer, bytes] of first) uploaded += this.#write(this.#phys[buffer]!, 0, bytes);
      // Fed inputs: one slot per step in one staging buffer, each at an offset the device can bind.
      // A slot may be bound as a uniform (an optimizer's step): aligned for both kinds of binding.
      // The run's slots of an input go in one write: each write is a copy the GPU runs behind a
      // barrier of its own (a write per slot cost the native runtime's MLP step 2.4-3.5 us).
      const align = Math.max(d.limits.minStorageBufferOffsetAlignment, d.limits.minUniformBufferOffsetAlignment ?? 4, 4);
      // By program buffer: a binding of it binds step k's slot, at first + k * stride, instead.
      const fedSlots = new Map<number, Slots>();
      const fedUsage = GPUBufferUsage.STORAGE | GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
      for (const [buffer, s] of slots) {
        const stride = roundUp(s.size, align);
        const staging = take(fedUsage, stride * n, "feed slots");
        const all = new Uint8Array(stride * n);
        s.bytes.forEach((b, k) => all.set(b, k * stride));
        uploaded += this.#write(staging, 0, all);
        fedSlots.set(buffer, { buffer: staging, first: 0, stride, size: s.size });
      }
      // A watched output whose kernel can write it into its slot of the history (the program says
      // which, outside the checking mode that poisons outputs) is, in every step but the last: a
      // copy per step is a transfer between dispatches that the GPU waits for as for a dependent
      // dispatch. Every binding of its buffer then binds the step's slot (aligned, as large as the
      // buffer). The last step's value stays in its own buffer, where a download after the run
      // reads it, and is copied like every other watched value.
      const historySlots = new Map<number, Slots>();
      for (const w of watched) {
        const out = w.output;
        const direct =
          n > 1 &&
          !this.#poisonOutputs &&
          out !== undefined &&
          out.writes_into_history_slot &&
          !this.#carries.some((c) => c.fromBuffer === out.buffer || c.toBuffer === out.buffer) &&
          !this.#sharesADispatch(out.buffer, historySlots);
        const size = direct ? p.buffers[out!.buffer]!.size : roundUp(w.bytes, 4);
        if (direct) historyBytes = roundUp(historyBytes, align);
        const slot = direct ? roundUp(size, align) : size;
        layout.push({ at: historyBytes, slot, direct });
        if (direct) historySlots.set(out!.buffer, { buffer: null, first: historyBytes, stride: slot, size });
        historyBytes += slot * n;
      }
      // Storage and uniform, as the buffer a slot stands for.
      const historyUsage = GPUBufferUsage.STORAGE | GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      const historyBuffer = historyBytes ? take(historyUsage, historyBytes, "history") : null;
      for (const h of historySlots.values()) h.buffer = historyBuffer;
      const slotted = new Map([...fedSlots, ...historySlots]);
      const readback = historyBytes ? take(GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, historyBytes, "readback") : null;

      const encoder = d.createCommandEncoder({ label: `${p.name}: ${n} steps` });
      // A temporally blocked body runs several iterations per dispatch: fewer rounds per step.
      const rounds = p.repeat / p.iterations_per_dispatch;
      const hoisted = p.dispatches.slice(0, p.hoisted_dispatches);
      const body = p.dispatches.slice(p.hoisted_dispatches);
      for (let k = 0; k < n; k++) {
        // A fed input's binding takes the step's slot of its staging buffer; in every step but the
        // last, a value written into its history slot's binding takes that slot.
        const last = k + 1 === n;
        const bound = last ? fedSlots : slotted;
        // The loop's invariants run once per step, in the first iteration's pass, before the body.
        for (let it = 0; it < rounds; it++) {
          let pass = encoder.beginComputePass();
          for (const ds of it === 0 ? [...hoisted, ...body] : body) {
            if (this.#poisonFill) {
              pass.end();
              for (const out of this.#writtenRanges(ds)) {
                encoder.copyBufferToBuffer(
                    this.#poisonFill, 0, this.#phys[out.buffer]!, out.offset, out.size);
              }
              pass = encoder.beginComputePass();
            }
            const entries = ds.bindings.map((b) => {
              const st = bound.get(b.buffer);
              if (st) return { buffer: st.buffer!, offset: st.first + k * st.stride + b.offset, size: b.size || st.size };
              return { buffer: this.#phys[b.buffer]!, offset: b.offset, size: b.size };
            });
            pass.setPipeline(this.#pipelines[ds.pipeline]!);
            pass.setBindGroup(0, this.#bindGroup(ds.pipeline, entries));
            pass.dispatchWorkgroups(ds.workgroups[0], ds.workgroups[1], ds.workgroups[2]);
            dispatches++;
          }
          pass.end();
          // The last iteration's values are the step's.
          if (it + 1 === rounds) {
            watched.forEach((w, i) => {
              const l = layout[i]!;
              if (!l.slot || (l.direct && !last)) return;
              encoder.copyBufferToBuffer(this.#source(w), 0, historyBuffer!, l.at + k * l.slot, roundUp(w.bytes, 4));
              copies++;
            });
          }
          // The carried outputs become the next iteration's inputs by swapping buffers, not by
          // copying.
          for (const c of this.#carries) {
            const t = this.#phys[c.fromBuffer]!;
            this.#phys[c.fromBuffer] = this.#phys[c.toBuffer]!;
            this.#phys[c.toBuffer] = t;
          }
        }
      }
      if (readback) encoder.copyBufferToBuffer(historyBuffer!, 0, readback, 0, historyBytes);
      d.queue.submit([encoder.finish()]);
      if (readback) {
        await readback.mapAsync(GPUMapMode.READ);
        mapped = new Uint8Array(readback.getMappedRange().slice(0));
        readback.unmap();
      } else {
        await d.queue.onSubmittedWorkDone();
      }
    } catch (e) {
      await this.#popScopes();
      // The session is poisoned: the run's buffers leave the pools (destroyed, so none stays
      // mapped).
      for (const b of taken) this.#discardPooled(b.buffer);
      this.#poison = e instanceof ScellisRuntimeError ? e : new ScellisRuntimeError("map-failed", `reading the results back failed: ${(e as Error).message}`, null, { cause: e });
      throw this.#poison;
    }
    for (const b of taken) this.#returnPooled(b);
    const scopeError = await this.#popScopes();
    if (scopeError) {
      this.#poison = scopeError;
      throw scopeError;
    }
    if (this.#runtime.lostError) {
      this.#poison = this.#runtime.lostError;
      throw this.#poison;
    }
    for (const i of p.inputs) if (first.has(i.buffer)) this.#pendingCarried.delete(i.name);

    const result: Record<string, Tensor[]> = {};
    watched.forEach((w, i) => {
      const shape = (w.output ?? w.input)!.shape;
      const dtype = (w.output ?? w.input)!.dtype;
      const { at, slot } = layout[i]!;
      const perStep: Tensor[] = [];
      for (let k = 0; k < n; k++) {
        perStep.push({ shape: [...shape], dtype, data: decode(dtype, mapped ? mapped.subarray(at + k * slot) : new Uint8Array(0), elementCount(shape)) });
      }
      result[w.name] = perStep;
    });
    return {
      watched: result,
      backend: "webgpu",
      executor: "fused-encoder",
      fallbackReason: null,
      stats: {
        steps: n,
        dispatches,
        copies,
        submissions: 1,
        maps: historyBytes ? 1 : 0,
        pipelinesCompiled: 0,
        bytesUploaded: uploaded,
        readbackBytes: historyBytes,
        buffersCreated: this.#buffersCreated - createdBefore,
        wallMs: performance.now() - start,
      },
    };
  }

  // Whether some dispatch binds `buffer` and one of the `others` written into their history slots
  // too (or `buffer` is one of them): a dispatch may not bind one buffer, the run's history, both
  // as read-only and as writable.
  #sharesADispatch(buffer: number, others: Map<number, Slots>): boolean {
    if (others.has(buffer)) return true;
    return this.program.dispatches.some((ds) => ds.bindings.some((b) => b.buffer === buffer) && ds.bindings.some((b) => others.has(b.buffer)));
  }

  // A buffer of `usage` and `size` bytes from the session's pool, or a new one (counted): runs of
  // one size reuse their staging and history buffers instead of allocating them every run. A run
  // holds what it takes until it ends (the session runs one call at a time).
  #takePooled(usage: number, size: number, label: string): { buffer: GPUBuffer; key: string } {
    const key = `${usage}:${size}`;
    const reused = this.#pool.get(key)?.pop();
    if (reused) return { buffer: reused, key };
    const buffer = this.#device.createBuffer({ size, usage, label });
    this.#pooled.add(buffer);
    this.#buffersCreated++;
    return { buffer, key };
  }
  #returnPooled({ buffer, key }: { buffer: GPUBuffer; key: string }): void {
    let free = this.#pool.get(key);
    if (!free) this.#pool.set(key, (free = []));
    free.push(buffer);
  }
  #discardPooled(b: GPUBuffer): void {
    this.#pooled.delete(b);
    if (b.mapState === "mapped") b.unmap();
    b.destroy();
  }

  // The buffer holding a watched name's value right after a step's dispatches.
  #source(w: { output?: ProgramOutput; input?: ProgramInput }): GPUBuffer {
    return this.#phys[(w.output ?? w.input)!.buffer]!;
  }

  async #popScopes(): Promise<ScellisRuntimeError | null> {
    const codes: ScellisRuntimeErrorCode[] = ["gpu-validation-error", "gpu-out-of-memory", "gpu-internal-error"];
    let found: ScellisRuntimeError | null = null;
    for (const code of codes) {
      const e = await this.#device.popErrorScope();
      if (e && !found) found = new ScellisRuntimeError(code, `WebGPU reported: ${e.message}`);
    }
    return found;
  }

  // Replaces the current value of a param or a carried input (the starting state of a pipeline's
  // next call): a queue write, no submission of its own; the next run sees it. Returns the bytes
  // written.
  upload(name: string, value: FeedValue): number {
    this.#usable();
    const input = this.#input(name);
    if (this.#isStepFed(input)) {
      throw new ScellisRuntimeError("bad-feed", `the input "${name}" is fed every step, not uploaded`, "pass it to run() or runSteps()");
    }
    const bytes = this.#write(this.#phys[input.buffer]!, 0, feedBytes(name, value, input.shape, input.dtype));
    this.#pendingCarried.delete(name);
    return bytes;
  }

  // The current value of an output or an input, by name (one submission, one map).
  async download(name: string): Promise<Tensor> {
    this.#usable();
    const w = this.#named(name);
    let buffer: number;
    if (w.output) {
      // After a step a carried output's value lives in its input's buffer (they swapped).
      const c = this.#carries.find((k) => k.fromBuffer === w.output!.buffer);
      buffer = c ? c.toBuffer : w.output.buffer;
    } else {
      buffer = w.input!.buffer;
    }
    const meta = (w.output ?? w.input)!;
    const size = Math.max(roundUp(w.bytes, 4), 4);
    const d = this.#device;
    d.pushErrorScope("internal");
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    const staging = d.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: `download ${name}` });
    let bytes: Uint8Array;
    try {
      const encoder = d.createCommandEncoder();
      encoder.copyBufferToBuffer(this.#phys[buffer]!, 0, staging, 0, size);
      d.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      bytes = new Uint8Array(staging.getMappedRange().slice(0));
      staging.unmap();
    } catch (e) {
      await this.#popScopes();
      staging.destroy();
      this.#poison = new ScellisRuntimeError("map-failed", `reading "${name}" back failed: ${(e as Error).message}`, null, { cause: e });
      throw this.#poison;
    }
    staging.destroy();
    const err = await this.#popScopes();
    if (err) {
      this.#poison = err;
      throw err;
    }
    return { shape: [...meta.shape], dtype: meta.dtype, data: decode(meta.dtype, bytes, elementCount(meta.shape)) };
  }

  // Frees the session's buffers. Every later call throws session-disposed.
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const b of this.#owned) b.destroy();
    this.#owned.length = 0;
    for (const b of this.#pooled) b.destroy();
    this.#pooled.clear();
    this.#pool.clear();
    this.#phys = [];
    this.#bindGroups.clear();
  }

  get disposed(): boolean {
    return this.#disposed;
  }
}
