// createPipeline: the TypeScript tracer against the Python package's (the same documents, after
// canonical ordering), Jacobi and Game of Life run on WebGPU (Dawn's Node bindings, SwiftShader
// where there is no GPU) and on the WebAssembly CPU reference, each against a float64 or exact
// oracle computed here, one submission per call, the re-trace rules and every trace error by code;
// protocol version 6 (a bitonic sort, the bit operations, arange) against values worked by hand.
// The documents are lowered by the WebAssembly build of the engine (web/wasm, built by
// tools/build_wasm.sh).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { arange, canonicalJson, createPipeline, createRuntime, type Handle, loop, type PipelineCompiler, type Runtime, TraceError, where } from "../src/index.js";

const SWIFTSHADER = "/usr/lib/chromium/vk_swiftshader_icd.json";
if (!process.env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER)) process.env.VK_ICD_FILENAMES = SWIFTSHADER;

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const ROWS = 12;
const COLS = 10;

// ---- the programs (python_documents.py writes the same ones in Python) ----

function neighbours(u: Handle, boundary: "zero" | "wrap" = "zero"): Handle {
  return u.shift([1, 0], boundary).add(u.shift([-1, 0], boundary)).add(u.shift([0, 1], boundary)).add(u.shift([0, -1], boundary));
}

function jacobi(this: { constants: { sweeps?: number } }, u: Handle, q: Handle): Handle {
  const sweeps = this.constants.sweeps ?? 40;
  for (let s = 0; s < sweeps; s++) u = neighbours(u).add(q).mul(0.25);
  return u;
}

function heat(u: Handle, steps: number, alpha: number): Handle {
  return loop(steps, (u) => u.add(neighbours(u).sub(u.mul(4.0)).mul(alpha)), u) as Handle;
}

function lifeStep(u: Handle): Handle {
  const n = neighbours(u, "wrap").add(u.shift([1, 1], "wrap").add(u.shift([1, -1], "wrap")).add(u.shift([-1, 1], "wrap")).add(u.shift([-1, -1], "wrap")));
  return u.where(n.eq(2), 0.0).maximum(n.eq(3).cast("f32"));
}

function life(this: { constants: { generations?: number } }, u: Handle): Handle {
  const generations = this.constants.generations ?? 20;
  for (let g = 0; g < generations; g++) u = lifeStep(u);
  return u;
}

function coupled(u: Handle, v: Handle) {
  const half = u.mul(0.5);
  const start = u;
  for (let k = 0; k < 12; k++) [u, v] = [u.add(v.shift([0, 1], "wrap").mul(0.25)).sub(half.mul(0.125)), v.mul(0.5).add(start.mul(0.25))];
  return { u: u.mul(2.0), v, total: u.add(v) };
}

function scan(x: Handle, w: Handle): Handle[] {
  for (let k = 0; k < 6; k++) x = x.matmul(w).cumsum(1).mul(0.01);
  return [x, x.sum()];
}

function accumulate(u: Handle, q: Handle): Handle[] {
  let total = u.mul(0.0); // a starting value computed before the loop: the prologue's
  for (let k = 0; k < 8; k++) {
    u = neighbours(u).add(q).mul(0.25);
    total = total.add(u);
  }
  return [u, total];
}

function once(x: Handle): Handle {
  return x.shift([1, 1], "wrap").mul(3.0);
}

// ---- oracles, in float64 ----

function jacobiF64(u0: ArrayLike<number>, q: ArrayLike<number>, sweeps: number): Float64Array {
  let u: Float64Array = Float64Array.from(u0);
  const at = (a: Float64Array, i: number, j: number) => (i < 0 || j < 0 || i >= ROWS || j >= COLS ? 0 : a[i * COLS + j]!);
  for (let s = 0; s < sweeps; s++) {
    const next = new Float64Array(u.length);
    for (let i = 0; i < ROWS; i++) for (let j = 0; j < COLS; j++) next[i * COLS + j] = (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1) + q[i * COLS + j]!) / 4;
    u = next;
  }
  return u;
}

function lifeExact(cells: Float32Array, generations: number): Float32Array {
  let u = Float32Array.from(cells);
  for (let g = 0; g < generations; g++) {
    const next = new Float32Array(u.length);
    for (let i = 0; i < ROWS; i++) {
      for (let j = 0; j < COLS; j++) {
        let n = 0;
        for (let di = -1; di <= 1; di++) for (let dj = -1; dj <= 1; dj++) if (di || dj) n += u[((i + di + ROWS) % ROWS) * COLS + ((j + dj + COLS) % COLS)]!;
        next[i * COLS + j] = n === 3 || (n === 2 && u[i * COLS + j]) ? 1 : 0;
      }
    }
    u = next;
  }
  return u;
}

// A deterministic pseudo-random field (xorshift), values in [lo, hi).
function field(seed: number, lo: number, hi: number, cells = false): Float32Array {
  let x = seed >>> 0 || 1;
  const out = new Float32Array(ROWS * COLS);
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    const r = x / 2 ** 32;
    out[i] = cells ? (r < 0.35 ? 1 : 0) : lo + (hi - lo) * r;
  }
  return out;
}

const grid = (data: Float32Array) => ({ shape: [ROWS, COLS], data });

function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, atol: number, what: string) {
  assert.equal(got.length, want.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
  assert.ok(worst <= atol, `${what}: max |got - want| = ${worst} > ${atol}`);
}

// ---- the engine: the WebAssembly build lowers and runs the documents ----

let compiler: PipelineCompiler;
let runtime: Runtime | null = null;
let noGpu: string | null = null;

before(async () => {
  const dist = new URL("../../../wasm/dist/index.js", import.meta.url);
  if (!existsSync(fileURLToPath(dist))) throw new Error(`the WebAssembly engine is not built (${fileURLToPath(dist)}): run tools/build_wasm.sh`);
  const wasm = (await import(dist.href)) as { loadReference(): Promise<PipelineCompiler> };
  compiler = await wasm.loadReference();
  try {
    const webgpu = (await import("webgpu")) as { create: (flags: string[]) => GPU; globals: object };
    Object.assign(globalThis, webgpu.globals);
    runtime = await createRuntime({ gpu: webgpu.create([]), allowSoftwareAdapter: true });
    if (runtime.backend !== "webgpu") noGpu = `no WebGPU adapter: ${runtime.fallbackReason}`;
  } catch (e) {
    noGpu = `the webgpu package cannot load here: ${(e as Error).message}`;
  }
});
after(() => runtime?.destroy());

function gpu(t: { skip: (m: string) => void }): Runtime | null {
  if (noGpu) {
    t.skip(noGpu);
    return null;
  }
  return runtime;
}

// ---- the same documents as Python's tracer ----

test("the TypeScript tracer makes the documents the Python tracer makes", async () => {
  const python = process.env.SCELLIS_PYTHON ?? `${repo}.venv/bin/python`;
  const text = execFileSync(python, [`${repo}web/runtime/test/python_documents.py`], { encoding: "utf8" });
  const want = JSON.parse(text) as Record<string, unknown>;
  const f = grid(new Float32Array(ROWS * COLS));
  const sq = { shape: [COLS, COLS], data: new Float32Array(COLS * COLS) };
  const got: Record<string, unknown> = {
    jacobi: (await createPipeline(jacobi, { compiler }).trace(f, f)).doc,
    heat: (await createPipeline(heat, { compiler }).trace(f, 30, 0.2)).doc,
    life: (await createPipeline(life, { compiler }).trace(f)).doc,
    coupled: (await createPipeline(coupled, { compiler }).trace(f, f)).doc,
    scan: (await createPipeline(scan, { compiler }).trace(f, sq)).doc,
    once: (await createPipeline(once, { compiler }).trace(f)).doc,
  };
  const eight = { shape: [8], data: new Float32Array(8) };
  got.bitonic_sort = (await createPipeline(bitonicSort, { compiler }).trace(eight)).doc;
  got.bit_ops = (await createPipeline(bitOps, { compiler }).trace(eight)).doc;
  const acc = await createPipeline(accumulate, { compiler }).trace(f, f);
  got.accumulate = acc.doc;
  got["accumulate.prologue"] = acc.prologue?.doc;
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const name of Object.keys(want)) {
    assert.equal(canonicalJson(got[name]), canonicalJson(want[name]), `${name}: the TypeScript and Python documents differ`);
  }
  // The loops rolled up: one body each, with the repeat counts of the loops.
  const repeats = Object.fromEntries(Object.entries(got).map(([n, d]) => [n, (d as { repeat?: number }).repeat ?? 1]));
  assert.deepEqual(repeats, { jacobi: 40, heat: 30, life: 20, coupled: 12, scan: 6, once: 1, accumulate: 8, "accumulate.prologue": 1, bitonic_sort: 1, bit_ops: 1 });
  const shifts = (got.jacobi as { nodes: Array<{ op: string }> }).nodes.filter((n) => n.op === "shift").length;
  assert.equal(shifts, 4);
});

// ---- running ----

test("Jacobi on WebGPU: one submission per call, the float64 oracle, traced once", async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const solve = createPipeline(jacobi, { constants: { sweeps: 40 }, runtime: rt, compiler, tier: "prod" });
  const u0 = field(7, -1, 1);
  const q = field(11, -1, 1);
  // The device's own count of submissions and maps, not the runtime's word for it.
  const counts = { submit: 0, map: 0 };
  const queue = rt.device!.queue;
  const submit = queue.submit.bind(queue);
  queue.submit = (buffers: Iterable<GPUCommandBuffer>) => {
    counts.submit++;
    submit(buffers);
  };
  const mapAsync = GPUBuffer.prototype.mapAsync;
  GPUBuffer.prototype.mapAsync = function (this: GPUBuffer, ...args: Parameters<GPUBuffer["mapAsync"]>) {
    counts.map++;
    return mapAsync.apply(this, args);
  };
  t.after(() => {
    queue.submit = submit;
    GPUBuffer.prototype.mapAsync = mapAsync;
  });
  await solve.trace(grid(u0), grid(q)); // traced, not yet prepared
  const first = await solve(grid(u0), grid(q));
  assert.deepEqual(counts, { submit: 1, map: 1 }, "the first call: one submission, one map");
  assert.equal(first.backend, "webgpu");
  assert.equal(first.executor, "fused-encoder");
  assert.equal(first.fallbackReason, null);
  assert.equal(first.stats.submissions, 1);
  assert.equal(first.stats.maps, 1);
  // The sweep is one stencil kernel, temporally blocked: 8 sweeps per dispatch.
  assert.equal(first.stats.dispatches, 40 / 8, `${first.stats.dispatches} dispatches for 40 sweeps`);
  const want = jacobiF64(u0, q, 40);
  const firstValue = first.value as { data: Float32Array };
  assertClose(firstValue.data, want, 1e-5, "jacobi");
  // A second call with other state: the same trace and session, again one submission; the first
  // result stays as it was.
  const kept = Float32Array.from(firstValue.data);
  const u1 = field(3, -1, 1);
  const second = await solve(grid(u1), grid(q));
  assert.equal(second.stats.submissions, 1);
  assert.deepEqual(counts, { submit: 2, map: 2 }, "the second call: one more submission, one more map");
  assert.equal(solve.traces, 1);
  assertClose((second.value as { data: Float32Array }).data, jacobiF64(u1, q, 40), 1e-5, "jacobi, second call");
  assert.deepEqual(firstValue.data, kept);
  solve.dispose();
});

test("Game of Life on WebGPU and on the WebAssembly reference, exactly", async (t) => {
  const cells = field(5, 0, 1, true);
  const want = lifeExact(cells, 20);
  const cpu = createPipeline(life, { constants: { generations: 20 }, runtime: null, compiler, tier: "prod" });
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (m: string) => warnings.push(m);
  let r;
  try {
    r = await cpu(grid(cells));
  } finally {
    console.warn = warn;
  }
  assert.equal(r.backend, "cpu");
  assert.equal(r.executor, "reference");
  assert.match(r.fallbackReason ?? "", /no usable WebGPU adapter: the pipeline was given no runtime/);
  assert.equal(warnings.length, 1);
  assert.deepEqual(Array.from((r.value as { data: Float32Array }).data), Array.from(want));
  const rt = gpu(t);
  if (!rt) return;
  const onGpu = createPipeline(life, { constants: { generations: 20 }, runtime: rt, compiler, tier: "prod" });
  const g = await onGpu(grid(cells));
  assert.equal(g.backend, "webgpu");
  assert.equal(g.stats.submissions, 1);
  assert.deepEqual(Array.from((g.value as { data: Float32Array }).data), Array.from(want));
  onGpu.dispose();
});

test("a loop started from an argument read again inside it, and results after it", async (t) => {
  // The document's `.state` param and the fed copy of the same argument, on the reference and on
  // WebGPU.
  const p = createPipeline(coupled, { runtime: null, compiler, tier: "prod" });
  const warn = console.warn;
  console.warn = () => undefined;
  const results = [];
  try {
    results.push(await p(grid(field(1, -1, 1)), grid(field(2, -1, 1))));
  } finally {
    console.warn = warn;
  }
  const rt = gpu(t);
  if (rt) results.push(await createPipeline(coupled, { runtime: rt, compiler, tier: "prod" })(grid(field(1, -1, 1)), grid(field(2, -1, 1))));
  const u0 = Float64Array.from(field(1, -1, 1));
  let u: Float64Array = Float64Array.from(u0);
  let v = Float64Array.from(field(2, -1, 1));
  for (let k = 0; k < 12; k++) {
    const nu = u.map((x, i) => x + v[Math.floor(i / COLS) * COLS + ((i % COLS) + COLS - 1) % COLS]! * 0.25 - u0[i]! * 0.5 * 0.125);
    const nv = v.map((x, i) => x * 0.5 + u0[i]! * 0.25);
    u = nu;
    v = nv;
  }
  for (const r of results) {
    const value = r.value as Record<string, { data: Float32Array }>;
    assert.deepEqual(Object.keys(value), ["u", "v", "total"]);
    assertClose(value.u!.data, u.map((x) => x * 2), 1e-5, `${r.backend}: u`);
    assertClose(value.v!.data, v, 1e-5, `${r.backend}: v`);
    assertClose(value.total!.data, u.map((x, i) => x + v[i]!), 1e-5, `${r.backend}: total`);
  }
});

test("a loop started from a value computed before it: the prologue runs first, on WebGPU and on the reference", async (t) => {
  const u0 = field(8, -1, 1);
  const q = field(9, -1, 1);
  let u: Float64Array = Float64Array.from(u0);
  const total = new Float64Array(u.length);
  for (let k = 0; k < 8; k++) {
    u = jacobiF64(u, q, 1);
    total.forEach((x, i) => (total[i] = x + u[i]!));
  }
  const warn = console.warn;
  console.warn = () => undefined;
  const results = [];
  try {
    results.push(await createPipeline(accumulate, { runtime: null, compiler, tier: "prod" })(grid(u0), grid(q)));
  } finally {
    console.warn = warn;
  }
  const rt = gpu(t);
  if (rt) {
    const p = createPipeline(accumulate, { runtime: rt, compiler, tier: "prod" });
    const r = await p(grid(u0), grid(q));
    assert.equal(r.stats.submissions, 1, "the loop's own submission (the prologue has one more)");
    results.push(r);
    p.dispose();
  }
  for (const r of results) {
    const [gu, gt] = r.value as Array<{ data: Float32Array }>;
    assertClose(gu!.data, u, 1e-5, `${r.backend}: u`);
    assertClose(gt!.data, total, 1e-5, `${r.backend}: total`);
  }
});

// ---- re-tracing ----

test("re-traced only when a shape, a constant argument or the constants change", async () => {
  const p = createPipeline(jacobi, { constants: { sweeps: 4 }, compiler });
  const f = grid(new Float32Array(ROWS * COLS));
  assert.equal((await p.trace(f, f)).repeat, 4);
  await p.trace(f, f);
  assert.equal(p.traces, 1);
  await p.trace({ shape: [4, 5], data: new Float32Array(20) }, { shape: [4, 5], data: new Float32Array(20) });
  assert.equal(p.traces, 2);
  p.setConstants({ sweeps: 6 });
  assert.equal((await p.trace(f, f)).repeat, 6);
  assert.equal(p.traces, 3);
  p.setConstants({ sweeps: 4 });
  await p.trace(f, f);
  assert.equal(p.traces, 3, "a signature seen before is not traced again");
  const h = createPipeline(heat, { compiler });
  assert.equal((await h.trace(f, 30, 0.2)).repeat, 30);
  assert.equal((await h.trace(f, 31, 0.2)).repeat, 31);
  assert.equal(h.traces, 2);
});

// ---- the handle rules ----

function traceError(fn: (...args: never[]) => unknown, code: string, args: unknown[] = [grid(new Float32Array(ROWS * COLS))]) {
  const p = createPipeline(fn, { compiler });
  assert.throws(() => p.trace(...args), (e: unknown) => {
    assert.ok(e instanceof TraceError, `expected a TraceError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

test("reading a value inside the function is value-read-in-trace", () => {
  traceError((u: Handle) => (u as unknown as number[])[0], "value-read-in-trace");
  traceError((u: Handle) => (u as unknown as { data: unknown }).data, "value-read-in-trace");
  traceError((u: Handle) => (u as unknown as number) * 2, "value-read-in-trace");
  traceError((u: Handle) => `${u as unknown as string}`, "value-read-in-trace");
  traceError((u: Handle) => [...(u as unknown as number[])], "value-read-in-trace");
  traceError((u: Handle) => Object.keys(u), "value-read-in-trace");
  traceError((u: Handle) => u.mul(Math.random()), "value-read-in-trace");
});

test("control flow waiting on a value is data-dependent-control-flow", () => {
  traceError(async (u: Handle) => u, "data-dependent-control-flow");
  traceError((u: Handle) => (u as unknown as { then: unknown }).then, "data-dependent-control-flow");
  traceError(function* (u: Handle) {
    yield u;
  }, "data-dependent-control-flow");
});

test("a handle kept from an earlier trace is stale-handle", async () => {
  let kept: Handle | null = null;
  const p = createPipeline((u: Handle) => {
    if (kept) return u.add(kept);
    kept = u.mul(2);
    return kept;
  }, { compiler });
  await p.trace(grid(new Float32Array(ROWS * COLS)));
  assert.throws(() => p.trace({ shape: [2, 2], data: new Float32Array(4) }), { code: "stale-handle" });
  assert.throws(() => kept!.add(1), { code: "stale-handle" });
  assert.throws(() => p(kept), { code: "stale-handle" });
});

test("the other trace errors by code", () => {
  traceError((u: Handle) => loop(u as unknown as number, (x) => x.add(1), u), "loop-count-not-static");
  traceError((u: Handle) => loop(2.5, (x) => x.add(1), u), "loop-count-not-static");
  traceError((u: Handle) => {
    const a = loop(3, (x) => x.add(1), u) as Handle;
    return loop(3, (x) => x.mul(2), a);
  }, "one-loop-per-pipeline");
  traceError((u: Handle) => loop(3, (x) => [x, x], u), "bad-loop-body");
  traceError(() => 42, "bad-pipeline-output", []);
  traceError((u: Handle) => (u as unknown as { addd(x: number): Handle }).addd(1), "unknown-op");
  traceError((u: Handle) => u.add({} as Handle), "foreign-tensor");
  traceError((u: Handle) => where(u.gt(0), u, "x" as unknown as number), "foreign-tensor");
  const p = createPipeline((u: Handle) => u, { compiler });
  assert.throws(() => p.trace({ shape: [2, 2], data: new Float32Array(3) }), { code: "bad-pipeline-argument" });
  assert.throws(() => p.trace(new Map()), { code: "bad-pipeline-argument" });
});

// ---- protocol version 6: bit operations, the index ramp, butterflies ----

// Batcher's bitonic network, ascending: at stage (k, j) element i meets its partner i ^ j and
// keeps the smaller where (i & j == 0) == (i & k == 0), else the larger.
function bitonicSort(keys: Handle): Handle {
  const n = keys.shape![0]!;
  const bitClear = (bit: number) => arange([n]).bitwiseAnd(bit).eq(0);
  for (let k = 2; k <= n; k *= 2) {
    for (let j = k / 2; j >= 1; j /= 2) {
      const partner = keys.butterfly(j);
      keys = where(bitClear(j).eq(bitClear(k)), keys.minimum(partner), keys.maximum(partner));
    }
  }
  return keys;
}

function bitOps(x: Handle): Handle[] {
  const i = x.cast("i32");
  const back = (t: Handle) => t.cast("f32");
  return [back(i.bitwiseOr(5)), back(i.bitwiseXor(3)), back(i.bitwiseAnd(6)), back(i.shiftLeft(2)), back(i.shiftRight(1)), back(i.bitwiseAnd(i.shiftRight(31))), arange([2, 3], { axis: 1, dtype: "f32" })];
}

async function onReferenceAndGpu(t: { skip: (m: string) => void }, fn: (...args: never[]) => unknown, ...args: unknown[]) {
  const warn = console.warn;
  console.warn = () => undefined;
  const results = [];
  try {
    results.push(await createPipeline(fn, { runtime: null, compiler, tier: "prod" })(...args));
  } finally {
    console.warn = warn;
  }
  const rt = runtime !== null && noGpu === null ? runtime : null;
  if (rt) results.push(await createPipeline(fn, { runtime: rt, compiler, tier: "prod" })(...args));
  else t.skip(noGpu ?? "no runtime");
  return results;
}

test("a bitonic sort traced in TypeScript: version-6 ops, one unrolled graph, sorted on the reference and on WebGPU", async (t) => {
  const keys = Float32Array.from([0.5, -1.25, 3, 2, -7, 0.25, 9, 1]);
  const doc = (await createPipeline(bitonicSort, { compiler }).trace({ shape: [8], data: keys })).doc as { version: number; repeat?: number; nodes: Array<{ op: string; mask?: number }> };
  assert.equal(doc.version, 6);
  assert.equal(doc.repeat, undefined, "the stages differ (their masks): no loop");
  // 8 keys: 3 * 4 / 2 = 6 stages, masks 1; 2 1; 4 2 1.
  assert.deepEqual(doc.nodes.filter((n) => n.op === "butterfly").map((n) => n.mask), [1, 2, 1, 4, 2, 1]);
  for (const r of await onReferenceAndGpu(t, bitonicSort, { shape: [8], data: keys })) {
    // Sorted by hand.
    assert.deepEqual(Array.from((r.value as { data: Float32Array }).data), [-7, -1.25, 0.25, 0.5, 1, 2, 3, 9], r.backend);
  }
});

test("bit operations and arange traced in TypeScript, against values worked by hand", async (t) => {
  const x = { shape: [8], data: Float32Array.from([-4, -3, -2, -1, 0, 1, 2, 3]) };
  const doc = (await createPipeline(bitOps, { compiler }).trace(x)).doc as { version: number };
  assert.equal(doc.version, 6);
  // Two's complement: -4 = ...11100, -3 = ...11101, -2 = ...11110, -1 = ...11111.
  const want = [
    [-3, -3, -1, -1, 5, 5, 7, 7], // x | 5
    [-1, -2, -3, -4, 3, 2, 1, 0], // x ^ 3
    [4, 4, 6, 6, 0, 0, 2, 2], // x & 6
    [-16, -12, -8, -4, 0, 4, 8, 12], // x << 2
    [-2, -2, -1, -1, 0, 0, 1, 1], // x >> 1, arithmetic
    [-4, -3, -2, -1, 0, 0, 0, 0], // x & (x >> 31): the sign's mask keeps the negatives
    [0, 1, 2, 0, 1, 2], // the column index of a 2 x 3 tensor
  ];
  for (const r of await onReferenceAndGpu(t, bitOps, x)) {
    const got = (r.value as Array<{ data: Float32Array }>).map((v) => Array.from(v.data));
    assert.deepEqual(got, want, r.backend);
  }
});

test("arange outside a pipeline's function is outside-trace; a bad butterfly mask is bad-attribute", () => {
  assert.throws(() => arange([4]), { code: "outside-trace" });
  traceError((u: Handle) => u.butterfly(-1), "bad-attribute");
  traceError((u: Handle) => u.butterfly(1.5), "bad-attribute");
});
