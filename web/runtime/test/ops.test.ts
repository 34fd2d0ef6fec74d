// The tracer's op table mirrors the engine's (`scellis ops --json`, written to the fixtures by
// make_fixtures.mjs): for every op a traced handle offers, the same input ports in the same order,
// the same family and the same protocol version. An op is defined once, in the engine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { OPS } from "../src/trace.js";

interface EngineSpec {
  name: string;
  family: string;
  min_version: number;
  inputs: Array<{ name: string }>;
}

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test", "fixtures");

test("every op a traced handle offers is the engine's, port for port", () => {
  const table = JSON.parse(readFileSync(join(fixtures, "ops.json"), "utf8")) as {
    ops: EngineSpec[];
    node_types: EngineSpec[];
  };
  const engine = new Map([...table.ops, ...table.node_types].map((s) => [s.name, s]));
  assert.ok(engine.size > 60, `the engine's table has ${engine.size} entries`);
  for (const [name, mine] of Object.entries(OPS)) {
    const spec = engine.get(name);
    assert.ok(spec, `${name} is not in the engine's op table`);
    assert.deepEqual(mine.ports, spec.inputs.map((p) => p.name), `${name}'s ports`);
    assert.equal(mine.family, spec.family, `${name}'s family`);
    assert.equal(mine.version, spec.min_version, `${name}'s protocol version`);
  }
});
