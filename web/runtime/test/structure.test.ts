// The runtime's structure on a recording fake GPU: one command encoder, one submission and one map
// per run; per-step feeds bound from slots of one staging buffer; carries swapping buffers between
// steps; typed errors for every misuse.
import assert from "node:assert/strict";
import { test } from "node:test";

import { base64ToBytes, createRuntime, floatToHalf, halfToFloat, parseProgram, POISON_BITS, ScellisRuntimeError } from "../src/index.js";
import { FakeBuffer, fakeGpu } from "./fake_gpu.js";

function b64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString("base64");
}

// x (fed, [4]) and state (a param, [4], carried from "upd"): out = f(x, state); upd = g(out, state).
function program() {
  return {
    format: "scellis.device-program/1",
    name: "toy",
    content_id: "sha256:00",
    tier: "prod",
    tolerance: { class: "default", atol: 1e-6, rtol: 1e-5 },
    limits: { max_storage_buffer_binding_size: 134217728, min_storage_buffer_offset_alignment: 256, max_compute_workgroups_per_dimension: 65535 },
    max_steps_per_submission: 64,
    buffers: [0, 1, 2, 3].map((id) => ({ id, bytes: 16, size: 16, class: "working" })),
    sources: [{ name: "state", role: "param", buffer: 1, bytes: 16, data: b64([1, 2, 3, 4]) }],
    inputs: [
      { name: "x", role: "input", buffer: 0, shape: [4], dtype: "f32", bytes: 16, fed: true, carried: false, initial: false },
      { name: "state", role: "param", buffer: 1, shape: [4], dtype: "f32", bytes: 16, fed: false, carried: true, initial: true },
    ],
    pipelines: [
      { id: 0, kernel: "k0_fused_add", entry_point: "main", wgsl: "// f\n", hash: "sha256:a" },
      { id: 1, kernel: "k1_fused_mul", entry_point: "main", wgsl: "// g\n", hash: "sha256:b" },
    ],
    dispatches: [
      { step: 0, kernel: "k0_fused_add", pipeline: 0, bindings: [{ buffer: 0, offset: 0, size: 0 }, { buffer: 1, offset: 0, size: 0 }, { buffer: 2, offset: 0, size: 0 }], workgroups: [1, 1, 1] },
      { step: 1, kernel: "k1_fused_mul", pipeline: 1, bindings: [{ buffer: 2, offset: 0, size: 0 }, { buffer: 1, offset: 0, size: 0 }, { buffer: 3, offset: 0, size: 0 }], workgroups: [2, 1, 1] },
    ],
    outputs: [{ name: "out", buffer: 2, shape: [4], dtype: "f32", bytes: 16, writes_into_history_slot: false }],
    carries: [{ from: "upd", from_buffer: 3, to: "state", to_buffer: 1 }],
  };
}

const xs = (k: number) => ({ x: new Float32Array([k, k, k, k]) });

async function code(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    assert.ok(e instanceof ScellisRuntimeError, `not a ScellisRuntimeError: ${e}`);
    return e.code;
  }
  return "ok";
}

test("no navigator.gpu: backend none with the reason, and execute throws no-webgpu", async () => {
  const rt = await createRuntime();
  assert.equal(rt.backend, "none");
  assert.match(rt.fallbackReason!, /navigator\.gpu/);
  assert.equal(rt.adapterInfo, null);
  assert.equal(await code(rt.execute(program(), xs(1))), "no-webgpu");
});

test("a software adapter is no GPU unless allowed", async () => {
  for (const info of [
    { vendor: "google", architecture: "swiftshader", device: "", description: "SwiftShader driver", isFallbackAdapter: false },
    { vendor: "mesa", architecture: "", device: "llvmpipe (LLVM 15)", description: "", isFallbackAdapter: false },
    { vendor: "", architecture: "", device: "", description: "", isFallbackAdapter: true },
  ]) {
    const f = fakeGpu({ info });
    const refused = await createRuntime({ gpu: f.gpu });
    assert.equal(refused.backend, "none");
    assert.equal(refused.adapterInfo!.isSoftware, true);
    assert.match(refused.fallbackReason!, /software|fallback/);
    const allowed = await createRuntime({ gpu: f.gpu, allowSoftwareAdapter: true });
    assert.equal(allowed.backend, "webgpu");
    assert.equal(allowed.fallbackReason, null);
  }
  const hw = await createRuntime({ adapter: fakeGpu().adapter });
  assert.equal(hw.backend, "webgpu");
  assert.equal(hw.adapterInfo!.isSoftware, false);
});

test("runSteps records every step into one encoder, one submission, one map", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare(program());
  const before = { ...f.counters, dispatches: f.counters.dispatches.length, buffers: f.counters.buffers.length };
  const r = await s.runSteps(3, { feedsPerStep: [xs(1), xs(2), xs(3)], watch: ["out", "state"] });
  assert.equal(f.counters.encoders - before.encoders, 1);
  assert.equal(f.counters.submits - before.submits, 1);
  assert.equal(f.counters.maps - before.maps, 1);
  // The three steps' slots of x in one write (each write is a copy behind a barrier of its own).
  assert.equal(f.counters.writes - before.writes, 1);
  assert.deepEqual(
    { steps: r.stats.steps, dispatches: r.stats.dispatches, submissions: r.stats.submissions, maps: r.stats.maps, readback: r.stats.readbackBytes },
    { steps: 3, dispatches: 6, submissions: 1, maps: 1, readback: 2 * 3 * 16 },
  );
  assert.equal(r.backend, "webgpu");
  assert.equal(r.executor, "fused-encoder");
  assert.equal(r.fallbackReason, null);

  // One staging buffer for the feeds (3 slots at the 256-byte alignment), the history of the
  // watched values and the read-back buffer it is copied into, kept for the next run.
  const made = f.counters.buffers.slice(before.buffers);
  assert.equal(made.length, 3);
  assert.equal(r.stats.buffersCreated, 3);
  const feedStaging = made.find((b) => b.label?.startsWith("feed"))!;
  assert.equal(feedStaging.size, 3 * 256);
  for (let k = 0; k < 3; k++)
    assert.deepEqual(Array.from(new Float32Array(feedStaging.data.buffer.slice(k * 256, k * 256 + 16))), [k + 1, k + 1, k + 1, k + 1]);
  assert.ok(made.every((b) => !b.destroyed));
  // Neither value can be written into its history slot (the program says "out" cannot, the state
  // is an input): each is copied in every step.
  assert.equal(r.stats.copies, 2 * 3);

  const ds = f.counters.dispatches.slice(before.dispatches);
  // Step k binds x from slot k.
  for (let k = 0; k < 3; k++) {
    assert.equal(ds[2 * k]!.bindings[0]!.buffer, feedStaging);
    assert.equal(ds[2 * k]!.bindings[0]!.offset, k * 256);
    assert.equal(ds[2 * k]!.bindings[0]!.size, 16);
    assert.deepEqual(ds[2 * k + 1]!.groups, [2, 1, 1]);
  }
  // The carry swaps: the buffer step k writes as "upd" is what step k + 1 reads as "state".
  for (let k = 0; k < 2; k++) {
    const wroteUpd = ds[2 * k + 1]!.bindings[2]!.buffer;
    const readState = ds[2 * (k + 1)]!.bindings[1]!.buffer;
    assert.equal(wroteUpd, readState);
    assert.notEqual(ds[2 * k]!.bindings[1]!.buffer, readState);
  }
  // The watched starting state of step 0 came back through the map (the fake computes nothing).
  assert.deepEqual(Array.from(r.watched.state![0]!.data), [1, 2, 3, 4]);
  assert.equal(r.watched.out!.length, 3);
  s.dispose();
  assert.ok(made.every((b) => b.destroyed), "the session's run buffers are released with it");
  rt.destroy();
});

test("a watched output its kernel can write into its history slot is bound there in every step but the last", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const p = program();
  p.outputs[0]!.writes_into_history_slot = true;
  const s = await rt.prepare(p);
  const before = { dispatches: f.counters.dispatches.length, buffers: f.counters.buffers.length };
  const r = await s.runSteps(3, { feedsPerStep: [xs(1), xs(2), xs(3)], watch: ["state", "out"] });
  const history = f.counters.buffers.slice(before.buffers).find((b) => b.label === "history")!;
  // The state's 3 slots of 16 bytes, then out's, aligned, one 256-byte slot per step.
  assert.equal(history.size, 256 + 3 * 256);
  assert.equal(r.stats.readbackBytes, history.size);
  const ds = f.counters.dispatches.slice(before.dispatches);
  for (let k = 0; k < 3; k++) {
    const writes = ds[2 * k]!.bindings[2]!;
    const reads = ds[2 * k + 1]!.bindings[0]!;
    if (k < 2) {
      // k0 writes out into step k's slot, and k1 reads it there.
      for (const b of [writes, reads]) assert.deepEqual({ buffer: b.buffer, offset: b.offset, size: b.size }, { buffer: history, offset: 256 + k * 256, size: 16 });
    } else {
      assert.notEqual(writes.buffer, history);
      assert.equal(reads.buffer, writes.buffer);
    }
  }
  // The state every step, out in the last step only.
  assert.equal(r.stats.copies, 3 + 1);
  // A run of one step, or one that poisons outputs, copies every value.
  assert.equal((await s.runSteps(1, { feedsPerStep: [xs(4)], watch: ["out"] })).stats.copies, 1);
  const poisoned = await rt.prepare(p, { poisonOutputs: true });
  assert.equal((await poisoned.runSteps(3, { feedsPerStep: [xs(1), xs(2), xs(3)], watch: ["out"] })).stats.copies, 3);
  // Carried into the state by the session's own carries, out is copied too: its buffer swaps.
  const carried = await rt.prepare({ ...p, carries: [] }, { carry: [{ from: "out", to: "state" }] });
  assert.equal((await carried.runSteps(3, { feedsPerStep: [xs(1), xs(2), xs(3)], watch: ["out"] })).stats.copies, 3);
  // The same run again takes its buffers from the session's pools.
  const again = await s.runSteps(3, { feedsPerStep: [xs(1), xs(2), xs(3)], watch: ["state", "out"] });
  assert.equal(again.stats.buffersCreated, 0);
  rt.destroy();
});

test("a run that fails releases its pooled buffers unmapped", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare(program());
  const before = f.counters.buffers.length;
  const made = () => f.counters.buffers.slice(before);
  await s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] });
  const pooled = made();
  assert.equal(pooled.length, 3);
  // The read-back's map fails: the session is poisoned, and its buffers do not stay mapped.
  const readback = pooled.find((b) => b.label === "readback")!;
  readback.mapAsync = async () => {
    readback.mapState = "mapped";
    throw new Error("injected map failure");
  };
  assert.equal(await code(s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] })), "map-failed");
  assert.equal(made().length, 3, "the failed run took the pooled buffers");
  assert.ok(made().every((b) => b.destroyed && b.mapState === "unmapped"));
  assert.equal(await code(s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] })), "session-poisoned");
  s.dispose();
  rt.destroy();
});

test("a program's repeat records its dispatches that many times per step, the carry swapping after each, in one submission", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare({ ...program(), repeat: 4 });
  const before = { submits: f.counters.submits, maps: f.counters.maps, dispatches: f.counters.dispatches.length };
  const r = await s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] });
  assert.equal(f.counters.submits - before.submits, 1);
  assert.equal(f.counters.maps - before.maps, 1);
  assert.equal(r.stats.dispatches, 2 * 4 * 2);
  const ds = f.counters.dispatches.slice(before.dispatches);
  assert.equal(ds.length, 16);
  // Every iteration reads as "state" what the one before wrote as "upd"; a step's feed slot is
  // bound by all of its iterations.
  for (let i = 0; i + 1 < 8; i++) assert.equal(ds[2 * i + 1]!.bindings[2]!.buffer, ds[2 * (i + 1)]!.bindings[1]!.buffer);
  for (let i = 0; i < 8; i++) assert.equal(ds[2 * i]!.bindings[0]!.offset, i < 4 ? 0 : 256);
  // Only the last iteration's "out" of each step is read back: one slot per step.
  assert.equal(r.stats.readbackBytes, 2 * 16);
  await assert.rejects(rt.prepare({ ...program(), repeat: 0 }), { code: "bad-program" });
  await assert.rejects(rt.prepare({ ...program(), repeat: 4, iterations_per_dispatch: 3 }), { code: "bad-program" });
  rt.destroy();
});

test("a temporally blocked program records its dispatch list repeat / iterations_per_dispatch times per step", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare({ ...program(), repeat: 8, iterations_per_dispatch: 4 });
  const before = f.counters.dispatches.length;
  const r = await s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] });
  assert.equal(r.stats.dispatches, 2 * 2 * 2);
  assert.equal(f.counters.dispatches.length - before, 8);
  rt.destroy();
});

test("a program's hoisted dispatches run once per step, before its first iteration", async () => {
  // k0 (out = f(x, state)) stands for an invariant here: hoisted, it runs once per step; k1 the body.
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare({ ...program(), repeat: 4, hoisted_dispatches: 1 });
  const before = f.counters.dispatches.length;
  const r = await s.runSteps(2, { feedsPerStep: [xs(1), xs(2)], watch: ["out"] });
  assert.equal(r.stats.dispatches, 2 * (1 + 4));
  const kernels = f.counters.dispatches.slice(before).map((d) => d.pipeline.code);
  const step = ["// f\n", "// g\n", "// g\n", "// g\n", "// g\n"];
  assert.deepEqual(kernels, [...step, ...step]);
  await assert.rejects(rt.prepare({ ...program(), hoisted_dispatches: 3 }), { code: "bad-program" });
  await assert.rejects(rt.prepare({ ...program(), hoisted_dispatches: -1 }), { code: "bad-program" });
  rt.destroy();
});

test("execute: one submission, one map, every output, pipelines compiled once", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const r = await rt.execute(program(), xs(5));
  assert.deepEqual(Object.keys(r.outputs), ["out"]);
  assert.deepEqual(r.outputs.out!.shape, [4]);
  assert.equal(r.outputs.out!.dtype, "f32");
  assert.ok(r.outputs.out!.data instanceof Float32Array);
  assert.equal(r.stats.submissions, 1);
  assert.equal(r.stats.maps, 1);
  assert.equal(r.stats.pipelinesCompiled, 2);
  assert.equal(f.counters.submits, 1);
  assert.equal(f.counters.maps, 1);
  // Every buffer the run made is released.
  assert.ok(f.counters.buffers.every((b: FakeBuffer) => b.destroyed));
});

test("poisonOutputs: what a dispatch writes is filled with the sentinel first, in the same submission", async () => {
  // The fake device computes nothing, so every output element is one no kernel wrote.
  // The bits as read back (a NaN's payload survives only in the typed array, not as a JS number).
  const bits = (r: { outputs: Record<string, { data: ArrayLike<number> }> }) => {
    const d = r.outputs.out!.data as Float32Array;
    return Array.from(new Uint32Array(d.buffer, d.byteOffset, d.length));
  };
  const plain = fakeGpu();
  const unpoisoned = await (await createRuntime({ gpu: plain.gpu })).execute(program(), xs(5));
  assert.deepEqual(bits(unpoisoned), [0, 0, 0, 0]);

  const f = fakeGpu();
  const r = await (await createRuntime({ gpu: f.gpu })).execute(program(), xs(5), { poisonOutputs: true });
  assert.deepEqual(bits(r), [POISON_BITS, POISON_BITS, POISON_BITS, POISON_BITS]);
  assert.ok(Number.isNaN(r.outputs.out!.data[0]!));
  assert.equal(f.counters.encoders, 1);
  assert.equal(f.counters.submits, 1);
  assert.equal(f.counters.maps, 1);
  assert.ok(f.counters.buffers.every((b: FakeBuffer) => b.destroyed));
});

test("typed errors: step counts, feeds, names, dispose, poisoning", async () => {
  const f = fakeGpu();
  const rt = await createRuntime({ gpu: f.gpu });
  const s = await rt.prepare(program());
  assert.equal(await code(s.runSteps(65, { feedsPerStep: [] })), "bad-step-count");
  assert.equal(await code(s.runSteps(0)), "bad-step-count");
  assert.equal(await code(s.runSteps(1.5)), "bad-step-count");
  assert.equal(await code(s.runSteps(2, { feedsPerStep: [xs(1)] })), "missing-input-data");
  assert.equal(await code(s.run({ x: new Float32Array(3) })), "bad-feed");
  assert.equal(await code(s.run({ x: new Int32Array(4) })), "bad-feed");
  assert.equal(await code(s.run({ x: { shape: [2, 2], data: [1, 2, 3, 4] } })), "bad-feed");
  assert.equal(await code(s.run({ ...xs(1), nope: [1] })), "bad-feed");
  assert.equal(await code(s.run({ ...xs(1), state: [1, 2, 3, 4] })), "bad-feed");
  assert.equal(await code(s.runSteps(1, { feedsPerStep: [xs(1)], watch: ["nope"] })), "unknown-output");
  assert.equal(await code(s.download("nope")), "unknown-output");
  assert.equal(await code(rt.prepare(program(), { feeds: { x: [1, 2, 3, 4] } })), "bad-feed");
  assert.equal(await code(rt.prepare(program(), { carry: [{ from: "out", to: "x" }] })), "ok");
  assert.equal(await code(rt.prepare(program(), { carry: [{ from: "out", to: "nope" }] })), "bad-carry");
  assert.equal(await code(s.run({ x: [1, 2, 3, 4] })), "ok");
  // A feed for the param at prepare replaces its initializer.
  const s2 = await rt.prepare(program(), { feeds: { state: [9, 8, 7, 6] } });
  assert.deepEqual(Array.from((await s2.download("state")).data), [9, 8, 7, 6]);

  s.dispose();
  assert.equal(await code(s.runSteps(1, { feedsPerStep: [xs(1)] })), "session-disposed");
  assert.equal(await code(s.download("out")), "session-disposed");
  assert.equal(await code(s.run(xs(1))), "session-disposed");

  // A device error after work began poisons the session; only dispose remains.
  f.failNextScope();
  assert.equal(await code(s2.run(xs(1))), "gpu-validation-error");
  assert.equal(await code(s2.run(xs(1))), "session-poisoned");
  assert.equal(await code(s2.download("state")), "session-poisoned");
  s2.dispose();
});

test("a kernel that fails to compile is a wgsl-compile-error with the compiler's message", async () => {
  const f = fakeGpu({ failCompile: true });
  const rt = await createRuntime({ gpu: f.gpu });
  await assert.rejects(rt.prepare(program()), (e: unknown) => e instanceof ScellisRuntimeError && e.code === "wgsl-compile-error" && /1:2: bad/.test(e.message));
});

test("a program laid out beyond the device's limits is refused before anything runs", async () => {
  const p = program();
  p.limits.max_storage_buffer_binding_size = 1 << 30;
  p.buffers[2]!.size = p.buffers[2]!.bytes = 1 << 29;
  const f = fakeGpu({ limits: { maxStorageBufferBindingSize: 1 << 27, maxBufferSize: 1 << 30 } });
  const rt = await createRuntime({ gpu: f.gpu });
  assert.equal(await code(rt.prepare(p)), "program-over-device-limits");
  const f16 = program();
  f16.pipelines[0]!.wgsl = "enable f16;\n";
  assert.equal(await code(rt.prepare(f16)), "shader-f16-unavailable");
});

test("parseProgram refuses what is not a device program", () => {
  const bad = (v: unknown) => {
    try {
      parseProgram(v);
    } catch (e) {
      return (e as ScellisRuntimeError).code;
    }
    return "ok";
  };
  assert.equal(bad(program()), "ok");
  assert.equal(bad(JSON.stringify(program())), "ok");
  assert.equal(bad({ ...program(), format: "scellis.device-program/2" }), "bad-program");
  assert.equal(bad("{"), "bad-program");
  const p = program();
  p.dispatches[0]!.bindings[0]!.buffer = 9;
  assert.equal(bad(p), "bad-program");
  const q = program();
  q.dispatches[0]!.bindings[0]!.offset = 8;
  q.dispatches[0]!.bindings[0]!.size = 16;
  assert.equal(bad(q), "bad-program");
});

test("base64 and binary16 against known values", () => {
  // RFC 4648 §10.
  const text = (s: string) => new TextDecoder().decode(base64ToBytes(s));
  assert.deepEqual(["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"].map(text), ["", "f", "fo", "foo", "foob", "fooba", "foobar"]);
  // IEEE binary16: 1, -2, the largest finite, the smallest subnormal, infinity, and a tie to even.
  assert.equal(floatToHalf(1), 0x3c00);
  assert.equal(floatToHalf(-2), 0xc000);
  assert.equal(floatToHalf(65504), 0x7bff);
  assert.equal(floatToHalf(2 ** -24), 0x0001);
  assert.equal(floatToHalf(1e6), 0x7c00);
  assert.equal(floatToHalf(1 + 2 ** -11), 0x3c00);
  assert.equal(floatToHalf(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(halfToFloat(0x3555), 0.333251953125);
  assert.equal(halfToFloat(0x0001), 2 ** -24);
  assert.ok(Number.isNaN(halfToFloat(0x7e00)));
});
