// Makes the fixtures of the WebGPU tests: the device program of each example, and the CPU
// reference's run of it (the oracle), written by the engine's `scellis_device_program` tool
// (built by `cmake --build build --target scellis_device_program`; SCELLIS_DEVICE_PROGRAM names
// another binary). Only the engine writes programs; this script just calls it.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");
const tool = process.env.SCELLIS_DEVICE_PROGRAM ?? join(repo, "build", "scellis_device_program");
const out = join(here, "fixtures");

if (!existsSync(tool)) {
  console.error(
    `make_fixtures: ${tool} is missing; build it first:\n` +
      "  cmake --build build --target scellis_device_program   (from the repository root)\n" +
      "or point SCELLIS_DEVICE_PROGRAM at the binary",
  );
  process.exit(1);
}
mkdirSync(out, { recursive: true });

// name, document (from the repository's root), extra arguments (tier for documents that declare
// none; steps and history for the reference's session). loop_invariant is a loop whose source
// term is computed once, before the first iteration (a hoisted kernel); accumulate carries a
// running total of an input fed every step, which the tests work out themselves (no reference run:
// it would need the feeds).
const cases = [
  ["center_columns", "examples/center_columns.json", []],
  ["life_glider", "examples/life_glider.json", ["--tier", "prod"]],
  ["life_steps", "examples/life_steps.json", ["--tier", "prod", "--steps", "8", "--history", "next"]],
  ["mlp_step", "examples/mlp_step.json", ["--steps", "8", "--history", "loss"]],
  ["loop_invariant", "web/runtime/test/loop_invariant.json", []],
  ["accumulate", "web/runtime/test/accumulate.json", [], { reference: false }],
];
for (const [name, file, extra, { reference = true } = {}] of cases) {
  execFileSync(
    tool,
    [
      join(repo, file),
      ...extra,
      "--out",
      join(out, `${name}.program.json`),
      ...(reference ? ["--reference", join(out, `${name}.reference.json`)] : []),
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
}
// The engine's op table (the scellis binary beside the tool), which the tracer's table mirrors.
const scellis = join(dirname(tool), "scellis");
if (!existsSync(scellis)) {
  console.error(`make_fixtures: ${scellis} is missing; build it first: cmake --build build --target scellis`);
  process.exit(1);
}
writeFileSync(join(out, "ops.json"), execFileSync(scellis, ["ops", "--json"]));
console.log(`make_fixtures: ${cases.length} programs and the op table in ${out}`);
