// Test inputs: the repository's examples and an op table written by hand from the engine's
// registry (src/ops/builtin.cpp) in the shape GET /api/ops sends.
import { readFileSync } from 'node:fs';
import { normalizeOpTable } from './optable';

export function example(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`../../../examples/${name}.json`, import.meta.url), 'utf8'));
}

export const table = normalizeOpTable(
  JSON.parse(readFileSync(new URL('./testdata/ops.json', import.meta.url), 'utf8')),
);
