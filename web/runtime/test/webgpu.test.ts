// The runtime on a real WebGPU implementation: Dawn's Node bindings (the `webgpu` package), on
// SwiftShader where the machine has no GPU (a software adapter, so the tests opt in). The programs
// are the engine's, for the examples (test/make_fixtures.mjs); expected values are computed here
// in float64, and the engine's CPU reference — the oracle — is compared within the tier's
// tolerance.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { base64ToBytes, createRuntime, type DeviceProgram, parseProgram, type Runtime, ScellisRuntimeError } from "../src/index.js";

const SWIFTSHADER = "/usr/lib/chromium/vk_swiftshader_icd.json";
if (!process.env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER)) process.env.VK_ICD_FILENAMES = SWIFTSHADER;

const fixtures = new URL("../../test/fixtures/", import.meta.url);
function load(name: string): { program: DeviceProgram; reference: Reference } {
  return {
    program: parseProgram(readFileSync(new URL(`${name}.program.json`, fixtures), "utf8")),
    reference: JSON.parse(readFileSync(new URL(`${name}.reference.json`, fixtures), "utf8")) as Reference,
  };
}
interface Reference {
  backend: string;
  outputs: Record<string, { shape: number[]; data: number[] | number }>;
  history?: Record<string, { shape: number[]; steps: Array<number[] | number> }>;
}
const flat = (v: number[] | number): number[] => (Array.isArray(v) ? v : [v]);

let runtime: Runtime | null = null;
let unavailable: string | null = null;

before(async () => {
  let gpu: GPU;
  try {
    const webgpu = (await import("webgpu")) as { create: (flags: string[]) => GPU; globals: object };
    Object.assign(globalThis, webgpu.globals);
    gpu = webgpu.create([]);
  } catch (e) {
    unavailable = `the webgpu package cannot load here: ${(e as Error).message}`;
    return;
  }
  runtime = await createRuntime({ gpu, allowSoftwareAdapter: true });
  if (runtime.backend !== "webgpu") unavailable = `no WebGPU adapter: ${runtime.fallbackReason}`;
});
after(() => runtime?.destroy());

function gpu(t: { skip: (m: string) => void }): Runtime | null {
  if (unavailable) {
    t.skip(unavailable);
    return null;
  }
  return runtime!;
}

// |got - want| <= atol + rtol * |want|, elementwise, as the engine's tolerance classes mean.
function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: { atol: number; rtol: number }, what: string) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    assert.ok(Math.abs(g - w) <= tol.atol + tol.rtol * Math.abs(w), `${what}[${i}]: got ${g}, want ${w} (atol ${tol.atol}, rtol ${tol.rtol})`);
  }
}

function sourceFloats(p: DeviceProgram, name: string): Float64Array {
  const s = p.sources.find((x) => x.name === name);
  assert.ok(s, `source ${name}`);
  const bytes = base64ToBytes(s.data);
  return Float64Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
}

// One Game-of-Life generation on a rows x cols torus (B3/S23).
function life(grid: ArrayLike<number>, rows: number, cols: number): number[] {
  const out = new Array<number>(rows * cols).fill(0);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let n = 0;
      for (let dr = -1; dr <= 1; dr++)
        for (let dc = -1; dc <= 1; dc++) if (dr || dc) n += grid[((r + dr + rows) % rows) * cols + ((c + dc + cols) % cols)]!;
      const alive = grid[r * cols + c]! === 1;
      out[r * cols + c] = n === 3 || (alive && n === 2) ? 1 : 0;
    }
  }
  return out;
}
function shift(grid: ArrayLike<number>, rows: number, cols: number, dr: number, dc: number): number[] {
  const out = new Array<number>(rows * cols).fill(0);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[((r + dr) % rows) * cols + ((c + dc) % cols)] = grid[r * cols + c]!;
  return out;
}

test("center_columns: centered data and projection match float64 and the CPU reference", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program, reference } = load("center_columns");
  const r = await rt.execute(program);
  assert.equal(r.backend, "webgpu");
  assert.equal(r.executor, "fused-encoder");
  assert.equal(r.fallbackReason, null);
  assert.equal(r.stats.submissions, 1);
  assert.equal(r.stats.maps, 1);

  // Float64: x is 1..12 as [4, 3]; the column means are 5.5, 6.5, 7.5; y = (x - mean) @ W with W
  // the program's own initial weights.
  const x = Array.from({ length: 12 }, (_, i) => i + 1);
  const mean = [0, 1, 2].map((c) => (x[c]! + x[3 + c]! + x[6 + c]! + x[9 + c]!) / 4);
  assert.deepEqual(mean, [5.5, 6.5, 7.5]);
  const centered = x.map((v, i) => v - mean[i % 3]!);
  const w = sourceFloats(program, "weights");
  const y: number[] = [];
  for (let i = 0; i < 4; i++) for (let k = 0; k < 2; k++) y.push([0, 1, 2].reduce((s, d) => s + centered[i * 3 + d]! * w[d * 2 + k]!, 0));

  assert.deepEqual(r.outputs.centered!.shape, [4, 3]);
  assert.deepEqual(r.outputs.y!.shape, [4, 2]);
  assertClose(r.outputs.centered!.data, centered, program.tolerance, "centered");
  assertClose(r.outputs.y!.data, y, program.tolerance, "y");
  assertClose(r.outputs.y!.data, flat(reference.outputs.y!.data), program.tolerance, "y vs reference");
  assertClose(r.outputs.centered!.data, flat(reference.outputs.centered!.data), program.tolerance, "centered vs reference");
});

test("life_glider: four generations translate the glider by one cell down and right", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program, reference } = load("life_glider");
  const start = Array.from(sourceFloats(program, program.sources[0]!.name));
  const r = await rt.execute(program);
  let want = start;
  for (let g = 0; g < 4; g++) want = life(want, 8, 8);
  assert.deepEqual(want, shift(start, 8, 8, 1, 1)); // the glider's period-4 translation
  assert.deepEqual(Array.from(r.outputs.grid!.data), want);
  assert.deepEqual(Array.from(r.outputs.grid!.data), flat(reference.outputs.grid!.data));
  assert.equal(r.stats.dispatches, program.dispatches.length);
});

test("poisonOutputs: every element is written, so a poisoned run gives the same bits", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program } = load("center_columns");
  const plain = await rt.execute(program);
  const poisoned = await rt.execute(program, {}, { poisonOutputs: true });
  assert.equal(poisoned.stats.submissions, 1);
  for (const name of Object.keys(plain.outputs)) {
    const a = plain.outputs[name]!.data as Float32Array;
    const b = poisoned.outputs[name]!.data as Float32Array;
    assert.deepEqual(new Uint32Array(b.buffer, b.byteOffset, b.length), new Uint32Array(a.buffer, a.byteOffset, a.length), name);
  }
});

test("loop_invariant: the hoisted source term runs once, before the blocked sweeps; float64 and the reference agree", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program, reference } = load("loop_invariant");
  // w = 0.1 exp(q) + q[i-1, j] reads nothing carried: one dispatch before the loop; the sweep
  // u <- (neighbours(u) + w + w[i, j-1]) / 4 is one stencil kernel, 8 iterations per dispatch.
  assert.equal(program.hoisted_dispatches, 1);
  assert.equal(program.iterations_per_dispatch, 8);
  const r = await rt.execute(program);
  assert.equal(r.stats.submissions, 1);
  assert.equal(r.stats.dispatches, 2);
  const n = 12;
  const q = sourceFloats(program, "q");
  const at = (a: ArrayLike<number>, i: number, j: number) => (i < 0 || j < 0 || i >= n || j >= n ? 0 : a[i * n + j]!);
  const w = Array.from(q, (_, k) => 0.1 * Math.exp(q[k]!) + at(q, Math.floor(k / n) - 1, k % n));
  let u = new Array<number>(n * n).fill(0);
  for (let it = 0; it < 8; it++) {
    u = u.map((_, k) => {
      const i = Math.floor(k / n), j = k % n;
      return (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1) + w[k]! + at(w, i, j - 1)) / 4;
    });
  }
  assertClose(r.outputs.u_next!.data, u, { atol: 1e-5, rtol: 1e-5 }, "u_next vs float64");
  assertClose(r.outputs.u_next!.data, flat(reference.outputs.u_next!.data), { atol: 1e-6, rtol: 1e-6 }, "u_next vs the reference");
  const poisoned = await rt.execute(program, {}, { poisonOutputs: true });
  assert.deepEqual(Array.from(poisoned.outputs.u_next!.data), Array.from(r.outputs.u_next!.data));
});

test("life_steps: a carried grid over many steps in one submission each", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program, reference } = load("life_steps");
  assert.equal(program.carries.length, 1);
  const start = Array.from(sourceFloats(program, "grid"));
  const s = await rt.prepare(program);
  try {
    const r = await s.runSteps(8, { watch: ["next"] });
    assert.equal(r.stats.submissions, 1);
    assert.equal(r.stats.maps, 1);
    assert.equal(r.stats.dispatches, 8 * program.dispatches.length);
    let want = start;
    const history = r.watched.next!;
    assert.equal(history.length, 8);
    for (let k = 0; k < 8; k++) {
      want = life(want, 16, 16);
      assert.deepEqual(Array.from(history[k]!.data), want, `step ${k}`);
      assert.deepEqual(Array.from(history[k]!.data), flat(reference.history!.next!.steps[k]!), `step ${k} vs reference`);
    }
    assert.deepEqual(Array.from(history[3]!.data), shift(start, 16, 16, 1, 1));
    assert.deepEqual(Array.from(history[7]!.data), shift(start, 16, 16, 2, 2));
    // The carried input holds the last step's output.
    assert.deepEqual(Array.from((await s.download("grid")).data), want);
    assert.deepEqual(Array.from((await s.download("next")).data), want);

    await assert.rejects(s.runSteps(65), (e: unknown) => e instanceof ScellisRuntimeError && e.code === "bad-step-count");
    // 64 more generations move the glider 16 cells: once around the 16 x 16 torus.
    const lap = await s.runSteps(64, { watch: ["next"] });
    assert.equal(lap.stats.submissions, 1);
    assert.deepEqual(Array.from(lap.watched.next![63]!.data), want);
  } finally {
    s.dispose();
  }
  await assert.rejects(s.runSteps(1), (e: unknown) => e instanceof ScellisRuntimeError && e.code === "session-disposed");
});

test("mlp_step: a training session carries weights and Adam state; the loss curve matches the reference", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const { program, reference } = load("mlp_step");
  assert.ok(program.carries.length >= 4);

  // Float64 loss of the first step, from the program's inputs and initial weights.
  const x = sourceFloats(program, "x");
  const labels = sourceFloats(program, "labels");
  const [w1, b1, w2, b2] = ["w1", "b1", "w2", "b2"].map((n) => sourceFloats(program, n)) as [Float64Array, Float64Array, Float64Array, Float64Array];
  const N = 4, D = 3, H = 5, C = 3;
  let loss0 = 0;
  for (let n = 0; n < N; n++) {
    const hidden = Array.from({ length: H }, (_, h) => Math.max(0, b1[h]! + [...Array(D).keys()].reduce((s, d) => s + x[n * D + d]! * w1[d * H + h]!, 0)));
    const logits = Array.from({ length: C }, (_, c) => b2[c]! + hidden.reduce((s, v, h) => s + v * w2[h * C + c]!, 0));
    const m = Math.max(...logits);
    const lse = m + Math.log(logits.reduce((s, v) => s + Math.exp(v - m), 0));
    loss0 += (lse - logits[labels[n]!]!) / N;
  }

  const s = await rt.prepare(program);
  try {
    // The optimizer's 1-based step number is the one input fed every step.
    assert.deepEqual(program.inputs.filter((i) => i.fed).map((i) => i.name), ["step"]);
    const feedsPerStep = Array.from({ length: 8 }, (_, k) => ({ step: [k + 1] }));
    const r = await s.runSteps(8, { feedsPerStep, watch: ["loss"] });
    const losses = r.watched.loss!.map((v) => v.data[0]!);
    assertClose([losses[0]!], [loss0], program.tolerance, "first loss vs float64");
    assertClose(losses, reference.history!.loss!.steps.map((v) => flat(v)[0]!), program.tolerance, "losses vs reference");
    assert.ok(losses[7]! < losses[0]!, `the loss falls: ${losses.join(", ")}`);
    assert.equal(r.stats.submissions, 1);
    // The weights stayed on the device and moved.
    const w1Now = await s.download("w1");
    assert.ok(Array.from(w1Now.data).some((v, i) => Math.abs(v - w1[i]!) > 1e-6));
  } finally {
    s.dispose();
  }
});

// A seeded generator (mulberry32) of whole numbers in [-9, 9]: every sum and square of the test is
// a whole number under 2^24, exact in f32, so the device's values are compared exactly.
function wholeNumbers(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) % 19) - 9;
  };
}

test("accumulate: watched values written into their history slots match float64, with one copy where the rules allow", { timeout: 120_000 }, async (t) => {
  const rt = gpu(t);
  if (!rt) return;
  const program = parseProgram(readFileSync(new URL("accumulate.program.json", fixtures), "utf8"));
  // total = acc + x is carried into acc; square = total * total, s = sum(total) and q = sum(square)
  // are computed, each alone in its buffer: their kernels can write them into history slots.
  const slotWriters = program.outputs.filter((o) => o.writes_into_history_slot).map((o) => o.name);
  assert.deepEqual(slotWriters, ["square", "s", "q"]);
  const draw = wholeNumbers(20261205);
  // The running total over every step of the session, in float64, and each step's values.
  const acc = [0, 0, 0, 0, 0];
  const steps = (n: number) =>
    Array.from({ length: n }, () => {
      const x = acc.map(() => draw());
      const before = [...acc];
      for (let i = 0; i < 5; i++) acc[i]! += x[i]!;
      const total = [...acc];
      const square = total.map((v) => v * v);
      const want = { acc: before, total, square, s: [total.reduce((a, v) => a + v, 0)], q: [square.reduce((a, v) => a + v, 0)] };
      return { feeds: { x: new Float32Array(x) }, want };
    });
  const check = (r: { watched: Record<string, Array<{ data: ArrayLike<number> }>> }, run: ReturnType<typeof steps>, what: string) => {
    for (const [name, history] of Object.entries(r.watched)) {
      assert.equal(history.length, run.length, `${what}: ${name}'s steps`);
      run.forEach((k, i) => assert.deepEqual(Array.from(history[i]!.data), k.want[name as keyof typeof k.want], `${what}: ${name} at step ${i}`));
    }
  };

  const s = await rt.prepare(program);
  try {
    // The square is written into its slot in 7 of 8 steps and copied in the last.
    let run = steps(8);
    const first = await s.runSteps(8, { feedsPerStep: run.map((k) => k.feeds), watch: ["square"] });
    check(first, run, "square alone");
    assert.equal(first.stats.copies, 1);
    assert.equal(first.stats.submissions, 1);
    assert.equal(first.stats.maps, 1);
    assert.ok(first.stats.buffersCreated > 0);
    // The last step's square is in its own buffer.
    assert.deepEqual(Array.from((await s.download("square")).data), run[7]!.want.square);

    // A run of the same size takes every buffer from the session's pools, and is as right.
    run = steps(8);
    const again = await s.runSteps(8, { feedsPerStep: run.map((k) => k.feeds), watch: ["square"] });
    check(again, run, "square again");
    assert.equal(again.stats.buffersCreated, 0);
    assert.equal(again.stats.copies, 1);

    // The carried total (its buffer swaps with acc's) and the input acc are copied every step.
    run = steps(8);
    const carried = await s.runSteps(8, { feedsPerStep: run.map((k) => k.feeds), watch: ["total", "acc"] });
    check(carried, run, "total and acc");
    assert.equal(carried.stats.copies, 2 * 8);

    // Everything at once: s is written into its slot; q's dispatch reads the square from its slot,
    // and may not bind the history writable too, so q is copied every step, like total and acc.
    run = steps(8);
    const all = await s.runSteps(8, { feedsPerStep: run.map((k) => k.feeds), watch: ["total", "square", "s", "q", "acc"] });
    check(all, run, "every value");
    assert.equal(all.stats.copies, 8 + 1 + 1 + 8 + 8);

    // A run of one step copies every watched value.
    run = steps(1);
    const one = await s.runSteps(1, { feedsPerStep: run.map((k) => k.feeds), watch: ["total", "square", "s", "q"] });
    check(one, run, "one step");
    assert.equal(one.stats.copies, 4);
    assert.deepEqual(Array.from((await s.download("acc")).data), run[0]!.want.total);
  } finally {
    s.dispose();
  }

  // Poisoning outputs, nothing is written into a slot: the same values, a copy every step.
  const poisoned = await rt.prepare(program, { poisonOutputs: true });
  try {
    acc.fill(0);
    const run = steps(8);
    const r = await poisoned.runSteps(8, { feedsPerStep: run.map((k) => k.feeds), watch: ["square", "s"] });
    check(r, run, "poisoned");
    assert.equal(r.stats.copies, 2 * 8);
  } finally {
    poisoned.dispose();
  }
});
