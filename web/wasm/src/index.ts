// @scellis/wasm-reference: the engine's CPU reference compiled to WebAssembly (apps/wasm), for a
// tab without a usable WebGPU adapter. run() answers with the JSON `scellis run --json
// --backend=cpu` prints — the same engine code, the same bits — and refusals come back as
// ScellisReferenceError carrying the engine's diagnostics. The page must show the reference's
// banner while it runs (the engine's rule: a CPU run is never silent); this package only computes.
import createScellisReference, { type ScellisReferenceModule } from "./scellis_reference.js";

export type Tier = "debug" | "prod" | "fast";

export interface RunOptions {
  /**
   * Why the page is not on WebGPU ("navigator.gpu is undefined", "requestAdapter() returned
   * null"): the result's fallback_reason is "no usable WebGPU adapter: " + this.
   */
  whyNoWebGPU: string;
  /** The determinism tier; leave it out when the document declares one. */
  tier?: Tier;
  /** Steps to run (1 when left out); carried values stay in the module between steps. */
  steps?: number;
  /** Outputs whose value after every step comes back (a loss curve). */
  history?: string[];
  /** Sizes of the document's symbolic dimensions ({"N": 64}). */
  bind?: Record<string, number>;
  /** The memory budget in bytes, over the document's own (as `scellis run --budget`). */
  budget?: number;
}

/** One diagnostic, as every Scellis front end prints it (base/diagnostic_json.h). */
export interface Diagnostic {
  code: string;
  severity: "error" | "warning" | "note";
  kind: "user" | "internal" | "runtime" | "state";
  pointer: string | null; // a JSON pointer into the document ("/nodes/3")
  where: string | null;
  message: string;
  help: string | null;
  node: string | null; // the id (as a string) of the node the pointer lies in
}

/**
 * Integral values are integers; non-finite ones the strings "NaN", "Infinity", "-Infinity". Every
 * finite f32 value reads back exactly (Math.fround of the number; -0 prints as -0.0).
 */
export type Value = number | "NaN" | "Infinity" | "-Infinity";

export interface Tensor {
  shape: number[];
  dtype: string;
  data: Value[];
}

export interface History {
  shape: number[];
  dtype: string;
  steps: Value[][];
}

export interface RunResult {
  backend: "cpu";
  executor: "reference";
  fallback_reason: string;
  attempts: string[];
  determinism_tier: Tier;
  content_id: string;
  outputs: Record<string, Tensor>;
  history?: Record<string, History>;
  stats: Record<string, number>;
  /** The compiler's and planner's warnings (the CLI prints them to stderr). */
  notes: Diagnostic[];
}

export class ScellisReferenceError extends Error {
  readonly diagnostics: Diagnostic[];
  /** The first diagnostic's code and pointer, the one to show first. */
  readonly code: string;
  readonly pointer: string | null;

  constructor(diagnostics: Diagnostic[]) {
    const first = diagnostics[0];
    super(first ? `${first.code}: ${first.message}` : "the reference refused the run without a diagnostic");
    this.name = "ScellisReferenceError";
    this.diagnostics = diagnostics;
    this.code = first?.code ?? "internal";
    this.pointer = first?.pointer ?? null;
  }
}

export interface Reference {
  /** The engine's version. */
  readonly version: string;
  /**
   * Runs the document (its JSON text) on the reference, synchronously; throws
   * ScellisReferenceError when the document or the options are refused.
   */
  run(documentText: string, options: RunOptions): RunResult;
  /**
   * Lowers the document to the device program ("scellis.device-program/1") the browser runtime
   * (@scellis/runtime) executes on the page's WebGPU device — what `scellis_device_program`
   * writes natively; throws ScellisReferenceError when the document is refused.
   */
  deviceProgram(documentText: string, options?: DeviceProgramOptions): DeviceProgram;
  /**
   * The document of a traced function (the engine's doc::TracedDocument), for @scellis/runtime's
   * createPipeline: `traceText` is the trace as JSON ({nodes, returns, types, needs, inputs,
   * name?, loop?}); the answer is the document with its loop rolled up, what a call feeds and
   * uploads as state, and the prologue of computed starting values. Throws ScellisReferenceError
   * (`bad-trace`, `unknown-op`, `unknown-shape`) on a trace it cannot make into one.
   */
  tracedDocument(traceText: string): TracedDocument;
}

/** A traced function's document, as the engine makes it. */
export interface TracedDocument {
  doc: Record<string, unknown>;
  repeat: number;
  /** document input -> argument, fed every call */
  fed: Record<string, string>;
  /** carried param -> argument, its value at each call's start */
  state: Record<string, string>;
  /** the loop's starting values computed before it: a document of their own */
  prologue: { doc: Record<string, unknown>; inputs: string[]; outputs: string[] } | null;
}

export interface DeviceProgramOptions {
  /** The determinism tier; leave it out when the document declares one. */
  tier?: Tier;
  /** Sizes of the document's symbolic dimensions. */
  bind?: Record<string, number>;
  /** The device's limits the program is laid out for (WebGPU's guaranteed ones when left out). */
  limits?: {
    max_storage_buffer_binding_size?: number;
    min_storage_buffer_offset_alignment?: number;
    max_compute_workgroups_per_dimension?: number;
    /** A kernel binding more storage buffers is refused (`too-many-storage-buffers`). */
    max_storage_buffers_per_shader_stage?: number;
  };
}

/** A device program as JSON data (its structure is @scellis/runtime's to check). */
export interface DeviceProgram {
  format: "scellis.device-program/1";
  name: string;
  repeat: number;
  [key: string]: unknown;
}

export interface LoadOptions {
  /**
   * The module's .wasm bytes. Under Node they are read from beside this file when left out; in a
   * browser the module fetches scellis_reference.wasm from beside its .js (a bundler that
   * understands `new URL(..., import.meta.url)` carries it along), unless given here.
   */
  wasmBinary?: ArrayBuffer | Uint8Array;
}

function inNode(): boolean {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string";
}

async function readBesideThisFile(name: string): Promise<Uint8Array> {
  // Named through a variable so that a bundler for the browser leaves Node's module alone.
  const fsModule = "node:fs/promises";
  const { readFile } = (await import(/* @vite-ignore */ fsModule)) as {
    readFile(path: URL): Promise<Uint8Array>;
  };
  return readFile(new URL(name, import.meta.url));
}

function copyIn(module: ScellisReferenceModule, text: string): number {
  const bytes = module.lengthBytesUTF8(text) + 1;
  const pointer = module._malloc(bytes);
  if (!pointer) throw new ScellisReferenceError([outOfMemory(bytes)]);
  module.stringToUTF8(text, pointer, bytes);
  return pointer;
}

// `bytes`: what could not be had (0: the answer's copy, of a size not known here).
function outOfMemory(bytes: number): Diagnostic {
  return {
    code: "wasm-out-of-memory",
    severity: "error",
    kind: "runtime",
    pointer: null,
    where: null,
    message: bytes
      ? `the WebAssembly reference could not allocate ${bytes} bytes for the document`
      : "the WebAssembly reference ran out of memory writing its answer",
    help: "a document this large needs the native engine or a GPU",
    node: null,
  };
}

function stopped(cause: unknown): Diagnostic {
  return {
    code: "wasm-reference-stopped",
    severity: "error",
    kind: "internal",
    pointer: null,
    where: null,
    message: `the WebAssembly reference stopped: ${String(cause)}`,
    help: "load the reference again (loadReference) to run another document",
    node: null,
  };
}

/**
 * Loads and starts the module. Each Reference is one WebAssembly instance; runs on it are
 * sequential (run is synchronous). Run it in a worker to keep the page responsive.
 */
export async function loadReference(options: LoadOptions = {}): Promise<Reference> {
  let wasmBinary = options.wasmBinary;
  if (!wasmBinary && inNode()) wasmBinary = await readBesideThisFile("scellis_reference.wasm");
  const module = await createScellisReference(wasmBinary ? { wasmBinary } : {});
  const version = module.UTF8ToString(module._scellis_version());
  // A trap (a bug, or memory exhausted mid-run) leaves the instance in no known state: it is not
  // used again.
  let broken: Diagnostic | null = null;

  // One call into the module: the document and the request in, the answer (JSON) out, a refusal
  // thrown with its diagnostics.
  function call(entry: (documentText: number, optionsJson: number) => number, documentText: string, request: object): unknown {
    if (broken) throw new ScellisReferenceError([broken]);
    const documentPointer = copyIn(module, documentText);
    let optionsPointer = 0;
    let answer: string;
    try {
      optionsPointer = copyIn(module, JSON.stringify(request));
      const resultPointer = entry(documentPointer, optionsPointer);
      if (!resultPointer) throw new ScellisReferenceError([outOfMemory(0)]);
      answer = module.UTF8ToString(resultPointer);
      module._free(resultPointer);
    } catch (error) {
      if (error instanceof ScellisReferenceError) throw error;
      broken = stopped(error);
      throw new ScellisReferenceError([broken]);
    } finally {
      if (!broken) {
        module._free(documentPointer);
        if (optionsPointer) module._free(optionsPointer);
      }
    }
    const parsed = JSON.parse(answer) as { ok?: false; diagnostics?: Diagnostic[] };
    if (parsed.ok === false) throw new ScellisReferenceError(parsed.diagnostics ?? []);
    return parsed;
  }

  return {
    version,
    run(documentText: string, runOptions: RunOptions): RunResult {
      const request = {
        why_no_webgpu: runOptions.whyNoWebGPU,
        ...(runOptions.tier !== undefined && { tier: runOptions.tier }),
        ...(runOptions.steps !== undefined && { steps: runOptions.steps }),
        ...(runOptions.history !== undefined && { history: runOptions.history }),
        ...(runOptions.bind !== undefined && { bind: runOptions.bind }),
        ...(runOptions.budget !== undefined && { budget: runOptions.budget }),
      };
      return call((d, o) => module._scellis_run(d, o), documentText, request) as RunResult;
    },
    deviceProgram(documentText: string, programOptions: DeviceProgramOptions = {}): DeviceProgram {
      const request = {
        ...(programOptions.tier !== undefined && { tier: programOptions.tier }),
        ...(programOptions.bind !== undefined && { bind: programOptions.bind }),
        ...(programOptions.limits !== undefined && { limits: programOptions.limits }),
      };
      return call((d, o) => module._scellis_device_program(d, o), documentText, request) as DeviceProgram;
    },
    tracedDocument(traceText: string): TracedDocument {
      return call((t, o) => module._scellis_traced_document(t, o), traceText, {}) as TracedDocument;
    },
  };
}

/**
 * A tensor's values as a Float32Array (the strings "NaN", "Infinity", "-Infinity" as those
 * values), for drawing or comparing bits.
 */
export function float32Values(values: Value[]): Float32Array {
  const out = new Float32Array(values.length);
  values.forEach((v, i) => {
    out[i] = v === "NaN" ? NaN : v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v;
  });
  return out;
}
