// The WebAssembly reference against the native one: every example, run by the module and by the
// `scellis` binary (`run --backend=cpu --json`, from $SCELLIS_BUILD, default ../../build), must give
// the same outputs bit for bit (compared as f32 bit patterns), the same content id and tier; a
// refused document the same diagnostics, pointer included.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { float32Values, loadReference, ScellisReferenceError, type Reference, type RunResult, type Tensor, type Value } from "@scellis/wasm-reference";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const root = resolve(packageDir, "../..");
const scellis = resolve(packageDir, process.env.SCELLIS_BUILD ?? "../../build", "scellis");
// Every example, and test/math_ops.json: the transcendental ops (exp, log, tanh, sigmoid, gelu,
// sqrt, division, softmax, log_softmax), a seeded param's initial values, a matmul and reductions
// over 128 values drawn uniformly from [-4, 4], where the examples are mostly small integers.
const examples = readdirSync(join(root, "examples"))
  .filter((f) => f.endsWith(".json"))
  .map((f) => join(root, "examples", f))
  .concat([join(packageDir, "test", "math_ops.json")]);
const WHY = "navigator.gpu is undefined (test)";

let reference: Reference;
before(async () => {
  assert.ok(existsSync(scellis), `the native binary ${scellis} is missing: build it, or set SCELLIS_BUILD`);
  reference = await loadReference();
});

// What the native binary prints with --json: the run report, or {ok: false, diagnostics}.
function nativeRun(file: string, flags: string[]): any {
  const r = spawnSync(scellis, ["run", file, "--backend=cpu", "--json", ...flags], { encoding: "utf8", maxBuffer: 1 << 30 });
  assert.ok(r.stdout.trim().startsWith("{"), `scellis run ${file} printed no JSON: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function wasmRun(text: string, options: Parameters<Reference["run"]>[1]): any {
  try {
    return reference.run(text, options);
  } catch (error) {
    if (error instanceof ScellisReferenceError) return { ok: false, diagnostics: error.diagnostics };
    throw error;
  }
}

// The CLI prints diagnostics without the document at hand, so its "node" (the id of the node a
// pointer lies in) is always null; the module looks it up. The rest must be equal.
function withoutNode(diagnostics: any[]): any[] {
  return diagnostics.map(({ node, ...rest }) => rest);
}

function bits(values: Value[]): number[] {
  return Array.from(new Uint32Array(float32Values(values).buffer));
}

function assertSameTensor(name: string, wasm: Tensor, native: Tensor) {
  assert.deepEqual(wasm.shape, native.shape, `${name}: shape`);
  assert.equal(wasm.dtype, native.dtype, `${name}: dtype`);
  const a = bits(wasm.data), b = bits(native.data);
  assert.equal(a.length, b.length, `${name}: element count`);
  const differ = a.findIndex((x, i) => x !== b[i]);
  assert.equal(differ, -1, `${name}: element ${differ} is ${wasm.data[differ]} (0x${a[differ]?.toString(16)}) in WebAssembly, ${native.data[differ]} (0x${b[differ]?.toString(16)}) natively`);
}

function assertSameRun(wasm: RunResult, native: any) {
  assert.equal(native.backend, "cpu");
  assert.equal(wasm.backend, "cpu");
  assert.equal(wasm.executor, native.executor);
  assert.equal(wasm.content_id, native.content_id);
  assert.equal(wasm.determinism_tier, native.determinism_tier);
  assert.equal(wasm.fallback_reason, `no usable WebGPU adapter: ${WHY}`);
  assert.deepEqual(Object.keys(wasm.outputs).sort(), Object.keys(native.outputs).sort());
  for (const name of Object.keys(native.outputs)) assertSameTensor(name, wasm.outputs[name], native.outputs[name]);
  assert.deepEqual(Object.keys(wasm.history ?? {}).sort(), Object.keys(native.history ?? {}).sort());
  for (const [name, h] of Object.entries<any>(native.history ?? {})) {
    const w = wasm.history![name];
    assert.equal(w.steps.length, h.steps.length, `${name}: history length`);
    h.steps.forEach((step: Value[], k: number) =>
      assertSameTensor(`${name} step ${k + 1}`, { shape: w.shape, dtype: w.dtype, data: w.steps[k] }, { shape: h.shape, dtype: h.dtype, data: step }));
  }
  assert.equal(wasm.stats.steps, native.stats.steps);
  assert.equal(wasm.stats.readback_bytes, native.stats.readback_bytes);
}

for (const file of examples) {
  const name = file.slice(file.lastIndexOf("/") + 1);
  const text = readFileSync(file, "utf8");
  // A training document's step input is fed by the trainer, which the run path has not got: both
  // refuse it alike, and that is compared instead.
  const training = text.includes('"train"');
  test(`${name}: ${training ? "refused alike (a training document)" : "the same bits as the native reference"}`, () => {
    const native = nativeRun(file, ["--tier=prod"]);
    const wasm = wasmRun(text, { tier: "prod", whyNoWebGPU: WHY });
    if (training) {
      assert.equal(native.ok, false);
      assert.equal(wasm.ok, false);
      assert.deepEqual(withoutNode(wasm.diagnostics), withoutNode(native.diagnostics));
      return;
    }
    assert.notEqual(native.ok, false, `native refused ${name}: ${JSON.stringify(native.diagnostics)}`);
    assertSameRun(wasm, native);
  });
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
  assert.deepEqual(refusal({ tier: "prod", history: ["nope"], whyNoWebGPU: WHY }).map((m) => m.split(":")[0]), ["unknown-output"]);
  const ok = reference.run(text, { tier: "prod", whyNoWebGPU: WHY });
  assert.deepEqual(ok.outputs.values.data, [0, 60, 120]);
  assert.match(reference.version, /^\d+\.\d+\.\d+$/);
});
