// What the WebAssembly reference is compared with: the native `scellis` binary (`run
// --backend=cpu --json`, from $SCELLIS_BUILD, default ../../build), output by output, as f32 bit
// patterns. Shared by the Node and the browser tests.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { float32Values, type RunResult, type Tensor, type Value } from "@scellis/wasm-reference";

export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const root = resolve(packageDir, "../..");
export const scellis = resolve(packageDir, process.env.SCELLIS_BUILD ?? "../../build", "scellis");
// Every example, and test/math_ops.json: the transcendental ops (exp, log, tanh, sigmoid, gelu,
// sqrt, division, softmax, log_softmax), a seeded param's initial values, a matmul and reductions
// over 128 values drawn uniformly from [-4, 4], where the examples are mostly small integers; the
// log and square root of those values give NaNs too.
export const examples = readdirSync(join(root, "examples"))
  .filter((f) => f.endsWith(".json"))
  .map((f) => join(root, "examples", f))
  .concat([join(packageDir, "test", "math_ops.json")]);
export const WHY = "navigator.gpu is undefined (test)";

// What the native binary prints with --json: the run report, or {ok: false, diagnostics}.
export function nativeRun(file: string, flags: string[]): any {
  const r = spawnSync(scellis, ["run", file, "--backend=cpu", "--json", ...flags], { encoding: "utf8", maxBuffer: 1 << 30 });
  assert.ok(r.stdout.trim().startsWith("{"), `scellis run ${file} printed no JSON: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// The CLI prints diagnostics without the document at hand, so its "node" (the id of the node a
// pointer lies in) is always null; the module looks it up. The rest must be equal.
export function withoutNode(diagnostics: any[]): any[] {
  return diagnostics.map(({ node, ...rest }) => rest);
}

// f32 bit patterns. The JSON names a NaN without its payload, so every NaN has one pattern here:
// a NaN compares equal to a NaN only.
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

export function assertSameRun(wasm: RunResult, native: any) {
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


// The same answer from both: the same bits, or the same refusal (diagnostics equal but for node).
export function assertSameOutcome(wasm: any, native: any) {
  if (native.ok === false) {
    assert.equal(wasm.ok, false, `native refused (${JSON.stringify(native.diagnostics)}), WebAssembly ran`);
    assert.deepEqual(withoutNode(wasm.diagnostics), withoutNode(native.diagnostics));
    return;
  }
  assert.notEqual(wasm.ok, false, `WebAssembly refused (${JSON.stringify(wasm.diagnostics)}), native ran`);
  assertSameRun(wasm, native);
}
