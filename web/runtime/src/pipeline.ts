// createPipeline(fn): a multi-pass computation written as a plain function over traced tensor
// handles, traced once into a graph protocol document (trace.ts: a `for` loop over a static count
// rolls up into the document's `repeat`), lowered once to a device program by the engine (the
// WebAssembly build's scellis_device_program, or any compiler with the same contract), and run
// from a prepared session: one submission and one readback per call, every iteration of the loop
// in the one command encoder, the loop state ping-ponging between two buffers.
//
//   const jacobi = createPipeline(function (u, q) {
//     for (let s = 0; s < this.constants.sweeps; s++) u = sweep(u, q);
//     return u;
//   }, { constants: { sweeps: 512 }, runtime, compiler: reference, tier: "prod" });
//   const r = await jacobi(u0, q); // r.value, r.backend, r.executor, r.fallbackReason, r.stats
//
// Arguments: a tensor ({shape, data, dtype?}) is symbolic in the trace; anything else (a number,
// a string) is a constant of the trace, as `this.constants` are. The function is traced again only
// when a tensor's shape or dtype, a constant argument, or the constants (setConstants) change;
// the documents, programs and sessions are kept per signature. Calls are served in order; each
// call's tensors are copied when it is made, so the caller may reuse them at once, and its result
// is its own (it stays valid after the next call).
//
// Without a usable WebGPU device (no adapter, a software one not allowed, or no runtime given)
// the document runs on the engine's CPU reference (the compiler's `run`, the WebAssembly build):
// the result says backend "cpu", executor "reference" and why WebGPU was not used, and the first
// such call warns on the console.

import { ScellisRuntimeError } from "./errors.js";
import type { Runtime, RunStats, Session } from "./runtime.js";
import { type DType, elementCount, feedBytes, type Tensor, type TensorData } from "./tensor.js";
import { documentOf, type TraceDocumenter, type TracedDocument, type TraceArgument, TraceError, isHandle, traceFunction } from "./trace.js";

// What lowers and runs documents: the WebAssembly reference (@scellis/wasm-reference's
// loadReference() has both methods) or a server doing the same.
export interface PipelineCompiler {
  // The device program ("scellis.device-program/1") of a document, for a device with `limits`.
  deviceProgram(documentText: string, options: { tier?: string; limits?: Record<string, number> }): unknown | Promise<unknown>;
  // The CPU reference's run of a document whose inputs hold their data.
  run(documentText: string, options: { whyNoWebGPU: string; tier?: "debug" | "prod" | "fast" }): ReferenceReport | Promise<ReferenceReport>;
  // A finished trace's document, its loop rolled up (the engine's doc::TracedDocument).
  tracedDocument: TraceDocumenter;
}

// The part of the reference's report a pipeline reads.
export interface ReferenceReport {
  backend: string;
  executor: string;
  fallback_reason: string | null;
  outputs: Record<string, { shape: number[]; dtype: string; data: Array<number | string> }>;
  stats: Record<string, number>;
}

export interface PipelineOptions {
  // Read by the function as `this.constants`; part of the trace's signature.
  constants?: Record<string, unknown>;
  // Runs the programs; null, or a runtime without a device, runs on the CPU reference.
  runtime?: Runtime | null;
  compiler: PipelineCompiler;
  tier?: "debug" | "prod" | "fast";
  // The document's name (default: the function's name).
  name?: string;
  // The input names of the function's parameters (default: read from the function's source,
  // which works for plain parameter lists).
  argNames?: string[];
}

export interface PipelineTensor {
  shape: number[];
  data: TensorData | ArrayLike<number>;
  dtype?: DType;
}

export type PipelineValue = Tensor | Tensor[] | Record<string, Tensor>;

export interface PipelineResult {
  // The function's result as it returned it: one tensor, an array, or an object of tensors.
  value: PipelineValue;
  outputs: Record<string, Tensor>;
  backend: "webgpu" | "cpu";
  executor: string;
  fallbackReason: string | null;
  stats: Partial<RunStats> & Record<string, number>;
}

export interface Pipeline {
  (...args: unknown[]): Promise<PipelineResult>;
  // The traced document for these arguments (traced now unless cached; a trace error is thrown
  // at once, the document given when the engine has rolled its loop up).
  trace(...args: unknown[]): Promise<TracedDocument>;
  // Replaces the constants; the next call re-traces when they differ.
  setConstants(constants: Record<string, unknown>): void;
  readonly constants: Readonly<Record<string, unknown>>;
  // How many times the function has been traced.
  readonly traces: number;
  // Frees the prepared sessions.
  dispose(): void;
}

// The parameter names of a plain function or arrow function, from its source.
function parameterNames(fn: (...args: never[]) => unknown): string[] | null {
  const text = Function.prototype.toString.call(fn);
  const m = /^[^(]*\(([^)]*)\)/.exec(text) ?? /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(text);
  if (!m) return null;
  const names = m[1]!
    .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return names.every((n) => /^[A-Za-z_$][\w$]*$/.test(n)) ? names : null;
}

function isTensorArgument(v: unknown): v is PipelineTensor {
  return typeof v === "object" && v !== null && !isHandle(v) && Array.isArray((v as PipelineTensor).shape) && "data" in v;
}

function dtypeOf(t: PipelineTensor): DType {
  if (t.dtype) return t.dtype;
  if (t.data instanceof Int32Array) return "i32";
  if (t.data instanceof Uint32Array) return "u32";
  return "f32";
}

interface Prepared {
  traced: TracedDocument;
  session: Session | null; // null on the CPU reference
  prologue: Session | null; // the computed starting values' session, where there are any
}

export function createPipeline(fn: (...args: never[]) => unknown, options: PipelineOptions): Pipeline {
  if (typeof fn !== "function") throw new TraceError("bad-pipeline-argument", "createPipeline takes a function");
  if (!options?.compiler) throw new TraceError("bad-pipeline-argument", "createPipeline needs a compiler (the WebAssembly reference's loadReference(), or a server's)");
  const argNames = options.argNames ?? parameterNames(fn);
  if (!argNames) {
    throw new TraceError("bad-pipeline-argument", "the function's parameter names cannot be read from its source", "name them: createPipeline(fn, { argNames: [\"u\", \"q\"] })");
  }
  const name = options.name ?? (fn.name || null);
  let constants: Record<string, unknown> = { ...(options.constants ?? {}) };
  const traced = new Map<string, Promise<TracedDocument>>();
  const prepared = new Map<string, Promise<Prepared>>();
  let traces = 0;
  let queue: Promise<unknown> = Promise.resolve();
  let warned = false;
  const runtime = options.runtime ?? null;

  function bind(args: unknown[]): { key: string; tensors: Map<string, PipelineTensor>; list: TraceArgument[] } {
    if (args.length > argNames!.length) {
      throw new TraceError("bad-pipeline-argument", `the pipeline takes ${argNames!.length} arguments (${argNames!.join(", ")}), got ${args.length}`);
    }
    const tensors = new Map<string, PipelineTensor>();
    const list: TraceArgument[] = [];
    const key: unknown[] = [];
    args.forEach((value, i) => {
      const n = argNames![i]!;
      if (isHandle(value)) {
        throw new TraceError("stale-handle", `the argument "${n}" is a traced tensor; a pipeline takes tensors with data`, "pass {shape, data} (a pipeline's results are such tensors)");
      }
      if (isTensorArgument(value)) {
        const dtype = dtypeOf(value);
        if (value.data.length !== elementCount(value.shape)) {
          throw new TraceError("bad-pipeline-argument", `the argument "${n}" holds ${value.data.length} elements for the shape [${value.shape.join(", ")}]`);
        }
        tensors.set(n, value);
        list.push({ name: n, tensor: { shape: [...value.shape], dtype } });
        key.push([n, "tensor", value.shape, dtype]);
      } else if (value === null || ["number", "string", "boolean", "undefined"].includes(typeof value)) {
        list.push({ name: n, constant: value });
        key.push([n, "constant", typeof value, value]);
      } else {
        throw new TraceError("bad-pipeline-argument", `the argument "${n}" is neither a tensor ({shape, data}) nor a constant (a number, a string, a boolean)`);
      }
    });
    let constantsKey: string;
    try {
      constantsKey = JSON.stringify(constants);
    } catch {
      throw new TraceError("bad-pipeline-argument", "the constants are not plain data (numbers, strings, arrays, objects)");
    }
    return { key: JSON.stringify([key, constantsKey]), tensors, list };
  }

  // The function is traced here, at once (a trace error is thrown to the caller); the document
  // follows when the engine has rolled the trace's loop up.
  function tracedFor(key: string, list: TraceArgument[]): Promise<TracedDocument> {
    let t = traced.get(key);
    if (!t) {
      const self = Object.freeze({ constants: Object.freeze({ ...constants }) });
      const recorded = traceFunction(fn as (...a: unknown[]) => unknown, self, list, name);
      traces++;
      t = documentOf(recorded, (text) => options.compiler.tracedDocument(text));
      traced.set(key, t);
      t.catch(() => traced.delete(key));
    }
    return t;
  }

  async function prepare(t: TracedDocument): Promise<Prepared> {
    if (runtime === null || runtime.backend !== "webgpu" || !runtime.device) return { traced: t, session: null, prologue: null };
    const lim = runtime.device.limits;
    const lower = (text: string) =>
      options.compiler.deviceProgram(text, {
        ...(options.tier ? { tier: options.tier } : {}),
        limits: {
          max_storage_buffer_binding_size: lim.maxStorageBufferBindingSize,
          min_storage_buffer_offset_alignment: lim.minStorageBufferOffsetAlignment,
          max_compute_workgroups_per_dimension: lim.maxComputeWorkgroupsPerDimension,
          max_storage_buffers_per_shader_stage: lim.maxStorageBuffersPerShaderStage,
        },
      });
    const session = await runtime.prepare(await lower(t.text));
    let prologue: Session | null = null;
    if (t.prologue) {
      try {
        prologue = await runtime.prepare(await lower(t.prologue.text));
      } catch (e) {
        session.dispose();
        throw e;
      }
    }
    return { traced: t, session, prologue };
  }

  async function runOnDevice(p: Prepared, state: Map<string, PipelineTensor>, fed: Record<string, PipelineTensor>): Promise<PipelineResult> {
    const s = p.session!;
    let uploaded = 0;
    for (const [n, v] of state) uploaded += s.upload(n, v);
    const r = await s.runSteps(1, { feedsPerStep: [fed], watch: p.traced.outputs });
    r.stats.bytesUploaded += uploaded;
    const outputs: Record<string, Tensor> = {};
    for (const n of p.traced.outputs) outputs[n] = r.watched[n]![0]!;
    return { value: shape(p.traced, outputs), outputs, backend: "webgpu", executor: r.executor, fallbackReason: r.fallbackReason, stats: { ...r.stats } };
  }

  async function runOnReference(t: TracedDocument, tensors: Map<string, PipelineTensor>): Promise<PipelineResult> {
    const why = whyNotWebGPU();
    if (!warned) {
      warned = true;
      console.warn(`scellis: pipeline ${name ?? "(anonymous)"} runs on the CPU reference (WebAssembly), not on WebGPU: ${why}`);
    }
    const { report, outputs } = await reference(referenceDocument(t, tensors));
    return { value: shape(t, outputs), outputs, backend: "cpu", executor: report.executor, fallbackReason: report.fallback_reason, stats: { ...report.stats } };
  }

  function whyNotWebGPU(): string {
    return runtime === null ? "the pipeline was given no runtime" : (runtime.fallbackReason ?? "the runtime has no device");
  }

  // One run of a document (its data written in) on the CPU reference, its outputs as tensors.
  async function reference(documentText: string): Promise<{ report: ReferenceReport; outputs: Record<string, Tensor> }> {
    const report = await options.compiler.run(documentText, { whyNoWebGPU: whyNotWebGPU(), ...(options.tier ? { tier: options.tier } : {}) });
    const outputs: Record<string, Tensor> = {};
    for (const [n, o] of Object.entries(report.outputs)) {
      const dtype = o.dtype as DType;
      const values = o.data.map((v) => (typeof v === "number" ? v : Number(v)));
      const data = dtype === "i32" ? Int32Array.from(values) : dtype === "u32" || dtype === "bool" ? Uint32Array.from(values) : Float32Array.from(values);
      outputs[n] = { shape: [...o.shape], dtype, data };
    }
    return { report, outputs };
  }

  const pipeline = ((...args: unknown[]): Promise<PipelineResult> => {
    const { key, tensors, list } = bind(args);
    const tracing = tracedFor(key, list);
    // The call's tensors, copied now: the caller may change its arrays while earlier calls run.
    const snapshot = new Map<string, PipelineTensor>();
    for (const [n, v] of tensors) {
      const dtype = dtypeOf(v);
      feedBytes(n, v, v.shape, dtype); // checks it now, where the caller sees the error
      snapshot.set(n, { shape: [...v.shape], dtype, data: ArrayBuffer.isView(v.data) ? (v.data as TensorData).slice() : Array.from(v.data) });
    }
    const call = queue.then(async () => {
      const t = await tracing;
      let p = prepared.get(key);
      if (!p) {
        p = prepare(t);
        prepared.set(key, p);
        p.catch(() => prepared.delete(key));
      }
      const ready = await p;
      if (ready.session === null) {
        if (t.prologue) {
          // The computed starting values first, on the reference too.
          const pre = await reference(prologueDocument(t, snapshot));
          for (const n of t.prologue.outputs) snapshot.set(n, pre.outputs[n]!);
        }
        return runOnReference(t, snapshot);
      }
      if (t.prologue) {
        try {
          const pre = await ready.prologue!.runSteps(1, { feedsPerStep: [Object.fromEntries(t.prologue.inputs.map((n) => [n, snapshot.get(n)!]))], watch: t.prologue.outputs });
          for (const n of t.prologue.outputs) snapshot.set(n, pre.watched[n]![0]!);
        } catch (e) {
          prepared.delete(key);
          ready.session!.dispose();
          ready.prologue!.dispose();
          throw e;
        }
      }
      const state = new Map<string, PipelineTensor>();
      for (const [pname, arg] of Object.entries(t.state)) state.set(pname, snapshot.get(arg)!);
      const fed: Record<string, PipelineTensor> = {};
      for (const [input, arg] of Object.entries(t.fed)) fed[input] = snapshot.get(arg)!;
      try {
        return await runOnDevice(ready, state, fed);
      } catch (e) {
        // A failed session is not reused: the next call prepares again.
        prepared.delete(key);
        ready.session?.dispose();
        ready.prologue?.dispose();
        throw e;
      }
    });
    queue = call.catch(() => undefined);
    return call;
  }) as Pipeline;

  Object.defineProperties(pipeline, {
    trace: { value: (...args: unknown[]) => { const b = bind(args); return tracedFor(b.key, b.list); } },
    setConstants: { value: (c: Record<string, unknown>) => { constants = { ...c }; } },
    constants: { get: () => Object.freeze({ ...constants }) },
    traces: { get: () => traces },
    dispose: {
      value: () => {
        for (const p of prepared.values()) {
          p.then(
            (r) => {
              r.session?.dispose();
              r.prologue?.dispose();
            },
            () => undefined,
          );
        }
        prepared.clear();
      },
    },
  });
  return pipeline;
}

function shape(t: TracedDocument, outputs: Record<string, Tensor>): PipelineValue {
  const values = t.outputs.map((n) => outputs[n]!);
  if (t.structure.kind === "single") return values[0]!;
  if (t.structure.kind === "array") return values;
  const keys = t.structure.keys;
  return Object.fromEntries(keys.map((k, i) => [k, values[i]!]));
}

// The prologue's document with the call's tensors written into its inputs (for the reference).
function prologueDocument(t: TracedDocument, tensors: Map<string, PipelineTensor>): string {
  const doc = t.prologue!.doc;
  const nodes = (doc.nodes as Array<Record<string, unknown>>).map((n) => (n.op === "input" ? { ...n, data: finiteData(n.name as string, tensors.get(n.name as string)!) } : n));
  return JSON.stringify({ ...doc, nodes });
}

function finiteData(arg: string, v: PipelineTensor): number[] {
  const out = Array.from(v.data, Number);
  if (!out.every(Number.isFinite)) {
    throw new ScellisRuntimeError("bad-feed", `the argument "${arg}" holds NaN or an infinity, which a document (JSON) cannot carry to the CPU reference`, "run on WebGPU, or pass finite values");
  }
  return out;
}

// The document with the call's tensors written in: for the CPU reference, whose run takes one
// document. A carried param becomes an input holding its starting value (still carried); a fed
// input holds its value.
function referenceDocument(t: TracedDocument, tensors: Map<string, PipelineTensor>): string {
  const argOf = new Map<string, string>([...Object.entries(t.state), ...Object.entries(t.fed)]);
  const data = (arg: string): number[] => finiteData(arg, tensors.get(arg)!);
  const nodes = (t.doc.nodes as Array<Record<string, unknown>>).map((n) => {
    const arg = argOf.get(n.name as string);
    if (arg === undefined || (n.op !== "param" && n.op !== "input")) return n;
    const out: Record<string, unknown> = { id: n.id, op: "input", name: n.name, shape: n.shape, dtype: n.dtype, data: data(arg) };
    if (n.carry !== undefined) out.carry = n.carry;
    return out;
  });
  return JSON.stringify({ ...t.doc, nodes });
}
