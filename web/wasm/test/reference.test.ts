// The WebAssembly reference against the native one (test/native.ts): every example, run by the
// module under Node and by the `scellis` binary, must give the same outputs bit for bit, the same
// content id and tier; a refused document the same diagnostics, pointer included.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { before, test } from "node:test";

import { loadReference, ScellisReferenceError, type Reference } from "@scellis/wasm-reference";

import { assertSameOutcome, assertSameRun, examples, nativeRun, root, scellis, WHY, withoutNode } from "./native.js";

let reference: Reference;
before(async () => {
  assert.ok(existsSync(scellis), `the native binary ${scellis} is missing: build it, or set SCELLIS_BUILD`);
  reference = await loadReference();
});

function wasmRun(text: string, options: Parameters<Reference["run"]>[1]): any {
  try {
    return reference.run(text, options);
  } catch (error) {
    if (error instanceof ScellisReferenceError) return { ok: false, diagnostics: error.diagnostics };
    throw error;
  }
}

// Each tier: debug computes what it can in f64 and prod and fast take other paths through the
// reference, so each is compared. A document that declares a stricter tier than the one asked for
// keeps its own (strictest wins) on both sides alike. A training document runs as its own steps
// when the run path can feed its inputs, and is refused alike when it cannot (a dataset's batches
// are the trainer's); the others must run.
for (const file of examples) {
  const name = file.slice(file.lastIndexOf("/") + 1);
  const text = readFileSync(file, "utf8");
  const training = text.includes('"train"');
  for (const tier of ["prod", "debug", "fast"] as const) {
    test(`${name} (${tier}): the native reference's answer, bit for bit`, () => {
      const native = nativeRun(file, [`--tier=${tier}`]);
      if (!training) assert.notEqual(native.ok, false, `native refused ${name}: ${JSON.stringify(native.diagnostics)}`);
      assertSameOutcome(wasmRun(text, { tier, whyNoWebGPU: WHY }), native);
    });
  }
}

test("many steps with a history: every step the same bits", () => {
  const file = join(root, "examples/life_steps.json");
  const outputs = Object.keys(nativeRun(file, ["--tier=prod"]).outputs);
  const native = nativeRun(file, ["--tier=prod", "--steps=70", ...outputs.map((o) => `--history=${o}`)]);
  const wasm = wasmRun(readFileSync(file, "utf8"), { tier: "prod", steps: 70, history: outputs, whyNoWebGPU: WHY });
  assert.equal(native.stats.submissions, 2);
  assertSameRun(wasm, native);
  assert.equal(wasm.history[outputs[0]].steps.length, 70);
});

test("a short training run: mlp_step's 40 Adam steps, its loss after every step bit for bit", () => {
  const file = join(root, "examples/mlp_step.json");
  const native = nativeRun(file, ["--tier=prod", "--steps=40", "--history=loss"]);
  const wasm = wasmRun(readFileSync(file, "utf8"), { tier: "prod", steps: 40, history: ["loss"], whyNoWebGPU: WHY });
  assertSameOutcome(wasm, native);
  const losses = wasm.history.loss.steps.map((step: number[]) => step[0]);
  assert.equal(losses.length, 40);
  assert.ok(losses[39] < losses[0], `the loss does not fall: ${losses[0]} → ${losses[39]}`);
});

test("a bad document comes back as the engine's diagnostic, with its pointer and node", () => {
  const doc = JSON.parse(readFileSync(join(root, "examples/seed_mul_relu.json"), "utf8"));
  doc.nodes[2].b = 7; // no node 7
  const text = JSON.stringify(doc);
  assert.throws(
    () => reference.run(text, { tier: "prod", whyNoWebGPU: WHY }),
    (error: unknown) => {
      assert.ok(error instanceof ScellisReferenceError);
      assert.equal(error.code, "dangling-reference");
      assert.equal(error.pointer, "/nodes/2/b");
      assert.equal(error.diagnostics[0].node, "2"); // ids are given as strings
      assert.equal(error.diagnostics[0].kind, "user");
      return true;
    },
  );
});

test("a document without a tier is refused as the CLI refuses it", () => {
  const file = join(root, "examples/seed_mul_relu.json");
  const native = nativeRun(file, []);
  const wasm = wasmRun(readFileSync(file, "utf8"), { whyNoWebGPU: WHY });
  assert.equal(wasm.ok, false);
  assert.equal(wasm.diagnostics[0].code, "missing-determinism-tier");
  assert.deepEqual(withoutNode(wasm.diagnostics), withoutNode(native.diagnostics));
});

test("the planner's verdict: a near-budget warning comes back as a note, an over-budget plan as the CLI's refusal", () => {
  const file = join(root, "examples/seed_mul_relu.json");
  const text = readFileSync(file, "utf8");
  // The plan needs 36 bytes.
  const near = wasmRun(text, { tier: "prod", budget: 40, whyNoWebGPU: WHY });
  assert.deepEqual(near.notes.map((d: any) => [d.code, d.severity]), [["near-budget", "warning"]]);
  assert.deepEqual(near.outputs.values.data, [0, 60, 120]);
  const over = wasmRun(text, { tier: "prod", budget: 20, whyNoWebGPU: WHY });
  assert.equal(over.ok, false);
  assert.equal(over.diagnostics[0].code, "memory-over-budget");
  assert.deepEqual(withoutNode(over.diagnostics), withoutNode(nativeRun(file, ["--tier=prod", "--budget=20"]).diagnostics));
});

test("bad options are refused by name, and the instance runs on afterwards", () => {
  const text = readFileSync(join(root, "examples/seed_mul_relu.json"), "utf8");
  const refusal = (options: any) => {
    try {
      reference.run(text, options);
    } catch (error) {
      assert.ok(error instanceof ScellisReferenceError);
      return error.diagnostics.map((d) => `${d.code}: ${d.message}`);
    }
    assert.fail(`options ${JSON.stringify(options)} were accepted`);
  };
  assert.deepEqual(refusal({ tier: "fastest", whyNoWebGPU: WHY }), ['bad-run-option: "tier" is "fastest", expected "debug", "prod" or "fast"']);
  assert.deepEqual(refusal({ tier: "prod", steps: 0, whyNoWebGPU: WHY }), ['bad-run-option: "steps" is 0, expected an integer from 1 to 1000000']);
  assert.deepEqual(refusal({ tier: "prod" }), ["bad-run-option: the run options do not say why WebGPU is not used"]);
  assert.deepEqual(refusal({ tier: "prod", budget: -1, whyNoWebGPU: WHY }), ['bad-run-option: "budget" is -1, expected a positive number of bytes']);
  assert.deepEqual(refusal({ tier: "prod", history: ["nope"], whyNoWebGPU: WHY }).map((m) => m.split(":")[0]), ["unknown-output"]);
  const ok = reference.run(text, { tier: "prod", whyNoWebGPU: WHY });
  assert.deepEqual(ok.outputs.values.data, [0, 60, 120]);
  assert.match(reference.version, /^\d+\.\d+\.\d+$/);
});

// The device program: what the browser runtime executes on the page's WebGPU device, lowered in
// the module, must be the program the native `scellis_device_program` writes — WGSL, bindings,
// grids and the loop's repeat alike.
test("deviceProgram: the native scellis_device_program's program, field for field", () => {
  const tool = resolve(dirname(scellis), "scellis_device_program");
  assert.ok(existsSync(tool), `the native tool ${tool} is missing: cmake --build build --target scellis_device_program`);
  const out = join(mkdtempSync(join(tmpdir(), "scellis-program-")), "program.json");
  for (const [file, tier] of [["pipelines/jacobi.json", "prod"], ["life_glider.json", "prod"], ["center_columns.json", "debug"]] as const) {
    execFileSync(tool, [join(root, "examples", file), "--tier", tier, "--out", out]);
    const native = JSON.parse(readFileSync(out, "utf8"));
    const wasm = reference.deviceProgram(readFileSync(join(root, "examples", file), "utf8"), { tier });
    assert.deepEqual(wasm, native, file);
  }
  assert.equal(reference.deviceProgram(readFileSync(join(root, "examples/pipelines/jacobi.json"), "utf8"), { tier: "prod" }).repeat, 512);
  // The device's limits lay the program out: a small binding cap tiles the large elementwise kernel.
  type Laid = { limits: { max_storage_buffer_binding_size: number }; dispatches: unknown[] };
  const jacobi = readFileSync(join(root, "examples/pipelines/jacobi.json"), "utf8");
  const plain = reference.deviceProgram(jacobi, { tier: "prod" }) as unknown as Laid;
  const capped = reference.deviceProgram(jacobi, { tier: "prod", limits: { max_storage_buffer_binding_size: 1 << 20 } }) as unknown as Laid;
  assert.equal(capped.limits.max_storage_buffer_binding_size, 1 << 20);
  assert.ok(capped.dispatches.length > plain.dispatches.length, `${capped.dispatches.length} dispatches under a 1 MiB cap, ${plain.dispatches.length} without`);
  // The path tracer's largest kernel binds 10 storage buffers: refused on a device that offers 8.
  const tracer = readFileSync(join(root, "examples/pipelines/path_tracer.json"), "utf8");
  assert.ok(reference.deviceProgram(tracer, { tier: "prod", limits: { max_storage_buffers_per_shader_stage: 10 } }));
  assert.throws(
    () => reference.deviceProgram(tracer, { tier: "prod", limits: { max_storage_buffers_per_shader_stage: 8 } }),
    (e: unknown) => e instanceof ScellisReferenceError && e.code === "too-many-storage-buffers",
  );
  assert.throws(() => reference.deviceProgram("{}", { tier: "prod" }), (e: unknown) => e instanceof ScellisReferenceError && e.diagnostics.length > 0);
  assert.throws(
    () => reference.deviceProgram(readFileSync(join(root, "examples/center_columns.json"), "utf8"), { limits: { warp_size: 32 } } as never),
    (e: unknown) => e instanceof ScellisReferenceError && e.code === "bad-run-option",
  );
});

test("tracedDocument: the engine's document of a trace, worked by hand; a malformed trace refused at its node", () => {
  // x, then y = relu(y + x) three times: the body is nodes 1-2; y starts from x (node 0), which
  // the body reads as it is too, so the state is a param of its own, "x.state".
  const nodes: Array<Record<string, unknown>> = [{ id: 0, op: "input", name: "x" }];
  let y = 0;
  for (let s = 0; s < 3; s++) {
    nodes.push({ id: nodes.length, op: "add", a: y, b: 0 });
    nodes.push({ id: nodes.length, op: "relu", a: nodes.length - 1 });
    y = nodes.length - 1;
  }
  const trace = (returns: Array<[string, number]>) =>
    JSON.stringify({ nodes, returns, types: nodes.map(() => [[4], "f32"]), needs: nodes.map(() => 1), inputs: ["x"] });
  assert.deepEqual(reference.tracedDocument(trace([["y", y]])), {
    doc: {
      version: 5,
      repeat: 3,
      nodes: [
        { id: 0, op: "param", name: "x.state", shape: [4], dtype: "f32", init: { kind: "zeros" }, carry: "y" },
        { id: 1, op: "input", name: "x" },
        { id: 2, op: "add", a: 0, b: 1 },
        { id: 3, op: "relu", a: 2 },
      ],
      outputs: [{ name: "y", id: 3 }],
    },
    repeat: 3,
    fed: { x: "x" },
    state: { "x.state": "x" },
    prologue: null,
  });
  // Returning the first copy's result too leaves nothing to roll up: the trace as it is.
  assert.equal(reference.tracedDocument(trace([["y", y], ["first", 2]])).repeat, 1);
  assert.throws(
    () => reference.tracedDocument(JSON.stringify({ nodes: [{ id: 0, op: "relu", a: 3 }], returns: [["y", 0]], types: [[[4], "f32"]], needs: [1], inputs: [] })),
    (e: unknown) => e instanceof ScellisReferenceError && e.code === "bad-trace" && e.pointer === "/nodes/0/a",
  );
});
