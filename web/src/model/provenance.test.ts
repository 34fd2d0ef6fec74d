import { describe, expect, it } from 'vitest';
import { docToFlow } from './document';
import { example, table } from './fixtures';
import { kernelsOfNode, nodesOfKernel, provenance } from './provenance';

// The rungs of center_columns as the engine's ToJson writes them (kernel nodes are WebIR ids;
// a WebIR node's origin is its document pointer), abridged to the fields read here.
const rungs = {
  webir: { json: { nodes: [
    { id: 0, name: 'x', origin: '/nodes/0' },
    { id: 1, name: 'w', origin: '/nodes/1' },
    { id: 2, name: 'mean', origin: '/nodes/2' },
    { id: 3, name: 'xc', origin: '/nodes/3' },
    { id: 4, name: 'y', origin: '/nodes/4' },
  ] } },
  kernel: { json: { kernels: [
    { name: 'k0_mean', nodes: [2], output: 2 },
    { name: 'k1_fused_sub', nodes: [3], output: 3 },
    { name: 'k2_matmul', nodes: [4], output: 4 },
  ] } },
  execplan: { json: { steps: [{ kernel: 'k0_mean' }, { kernel: 'k1_fused_sub' }, { kernel: 'k2_matmul' }] } },
};

describe('provenance', () => {
  const c = docToFlow(example('center_columns'), table);

  it('derives kernel → nodes from the rungs when no links are sent', () => {
    const p = provenance({ rungs }, c);
    expect(nodesOfKernel(p, 'k1_fused_sub')).toEqual(['xc']);
    expect(kernelsOfNode(p, 'y')).toEqual(['k2_matmul']);
    expect(p.steps.map((s) => s.kernel)).toEqual(['k0_mean', 'k1_fused_sub', 'k2_matmul']);
  });

  it('prefers the server links, in array or object form, by id or by pointer', () => {
    const a = provenance({ rungs, links: { kernels: [{ kernel: 'k1_fused_sub', webir: [3], doc: ['xc', 'mean'] }], steps: ['k1_fused_sub'] } }, c);
    expect(nodesOfKernel(a, 'k1_fused_sub')).toEqual(['xc', 'mean']);
    expect(a.steps).toEqual([{ index: 0, kernel: 'k1_fused_sub' }]);
    const b = provenance({ rungs, links: { kernels: { k0_mean: { doc_nodes: ['/nodes/2'] } } } }, c);
    expect(nodesOfKernel(b, 'k0_mean')).toEqual(['mean']);
  });

  it('maps graph documents by integer id', () => {
    const g = docToFlow(example('seed_mul_relu'), table);
    const p = provenance({ links: { kernels: [{ name: 'k0', doc: [2, 3] }] } }, g);
    expect(kernelsOfNode(p, '3')).toEqual(['k0']);
  });
});
