import { describe, expect, it } from 'vitest';
import { docToFlow } from './document';
import { example, table } from './fixtures';
import { placeDiagnostics, pointerTarget, splitPointer, toDiag } from './pointer';

describe('pointer → canvas', () => {
  const wf = docToFlow(example('center_columns'), table);
  const graph = docToFlow(example('matmul_chain'), table);

  it('maps /nodes/i to the (i+1)th node, and anything under it', () => {
    expect(pointerTarget('/nodes/3', wf)).toEqual({ kind: 'node', id: 'xc' });
    expect(pointerTarget('/nodes/0/params/data', wf)).toEqual({ kind: 'node', id: 'x' });
    expect(pointerTarget('/nodes/6/scalar', graph)).toEqual({ kind: 'node', id: '6' });
  });

  it('maps /wires/i to that wire, and a graph port to the wire into it', () => {
    expect(pointerTarget('/wires/2', wf)).toEqual({ kind: 'edge', id: 'mean->xc.b' });
    expect(pointerTarget('/wires/4/from', wf)).toEqual({ kind: 'edge', id: 'w->y.b' });
    expect(pointerTarget('/nodes/5/b', graph)).toEqual({ kind: 'edge', id: '4->5.b' });
  });

  it('maps outputs to their node, dims to the dim, the rest to the document', () => {
    expect(pointerTarget('/outputs/1', wf)).toEqual({ kind: 'node', id: 'xc' });
    expect(pointerTarget('/outputs/0/id', graph)).toEqual({ kind: 'node', id: '8' });
    expect(pointerTarget('/dims/N', wf)).toEqual({ kind: 'dim', name: 'N' });
    expect(pointerTarget('/determinism', wf)).toEqual({ kind: 'document' });
    expect(pointerTarget('/nodes/99', wf)).toEqual({ kind: 'document' });
    expect(pointerTarget('/wires/9', wf)).toEqual({ kind: 'document' });
    expect(pointerTarget(null, wf)).toEqual({ kind: 'document' });
    expect(pointerTarget('', wf)).toEqual({ kind: 'document' });
  });

  it('unescapes pointer tokens', () => {
    expect(splitPointer('/dims/a~1b~0c')).toEqual(['dims', 'a/b~c']);
  });

  it('places a list of diagnostics', () => {
    const diags = [
      { code: 'shape-mismatch', severity: 'error', pointer: '/nodes/4', message: 'm' },
      { code: 'bad-wire', severity: 'error', pointer: '/wires/0/to', message: 'w' },
      { code: 'missing-determinism-tier', severity: 'error', pointer: null, message: 't' },
      { code: 'x', severity: 'warning', pointer: '/train', message: 'n', node: 'mean' },
    ].map(toDiag).filter((d) => d !== null);
    const p = placeDiagnostics(diags, wf);
    expect([...p.byNode.keys()]).toEqual(['y', 'mean']);
    expect([...p.byEdge.keys()]).toEqual(['x->mean.a']);
    expect(p.document.map((d) => d.code)).toEqual(['missing-determinism-tier']);
  });
});
