import { describe, expect, it } from 'vitest';
import { docToFlow } from './document';
import { example, table } from './fixtures';
import { COLUMN_WIDTH, layeredLayout, loadLayout, positionsOf, saveLayout, withPositions } from './layout';

describe('layout', () => {
  const c = docToFlow(example('center_columns'), table);

  it('puts each node one column right of its deepest input', () => {
    const p = layeredLayout(c.nodes, c.edges);
    const col = (id: string) => (p[id].x - 40) / COLUMN_WIDTH;
    expect([col('x'), col('w'), col('mean'), col('xc'), col('y')]).toEqual([0, 0, 1, 2, 3]);
    expect(p.x.y).not.toBe(p.w.y);
  });

  it('survives a cycle', () => {
    const p = layeredLayout(c.nodes, [...c.edges, { id: 'back', source: 'y', target: 'x', sourceHandle: 'out', targetHandle: 'in:a' }]);
    expect(Object.keys(p)).toHaveLength(5);
  });

  it('stores positions by content id, never in the document', () => {
    const mem = new Map<string, string>();
    const store = { getItem: (k: string) => mem.get(k) ?? null, setItem: (k: string, v: string) => void mem.set(k, v) };
    const placed = withPositions(c, { x: { x: 500, y: 7 } });
    expect(placed.nodes[0].position).toEqual({ x: 500, y: 7 });
    saveLayout(store, 'sha256:ab', positionsOf(placed));
    expect(loadLayout(store, 'sha256:ab')?.x).toEqual({ x: 500, y: 7 });
    expect(loadLayout(store, 'sha256:cd')).toBeNull();
    expect(loadLayout(undefined, 'sha256:ab')).toBeNull();
  });
});
