import { describe, expect, it } from 'vitest';
import {
  addEdge,
  addNode,
  docToFlow,
  flowToDoc,
  inHandle,
  outputNameOf,
  removeNodes,
  setDim,
  setOutput,
  setParam,
} from './document';
import { example, table } from './fixtures';
import { jsonEqual } from './json';

const EXAMPLES = ['center_columns', 'fashion_mlp', 'mlp_step', 'life_glider', 'life_steps', 'matmul_chain', 'seed_mul_relu'];

describe('document ⇄ flow', () => {
  it.each(EXAMPLES)('%s round-trips to the same document', (name) => {
    const doc = example(name);
    const canvas = docToFlow(doc, table);
    expect(jsonEqual(flowToDoc(canvas, table), doc)).toBe(true);
  });

  it('keeps the key order of a workflow', () => {
    const doc = example('fashion_mlp') as object;
    expect(Object.keys(flowToDoc(docToFlow(doc, table), table))).toEqual(Object.keys(doc));
  });

  it('reads center_columns as five nodes and five wires into named ports', () => {
    const c = docToFlow(example('center_columns'), table);
    expect(c.form).toBe('workflow');
    expect(c.nodes.map((n) => n.id)).toEqual(['x', 'w', 'mean', 'xc', 'y']);
    expect(c.nodes[2].data).toMatchObject({ op: 'mean', params: { axis: 0 } });
    expect(c.edges.map((e) => `${e.source}>${e.target}:${e.targetHandle}`)).toEqual([
      'x>mean:in:a',
      'x>xc:in:a',
      'mean>xc:in:b',
      'xc>y:in:a',
      'w>y:in:b',
    ]);
  });

  it('reads graph references as wires and the rest as attributes', () => {
    const c = docToFlow(example('matmul_chain'), table);
    expect(c.form).toBe('graph');
    const mul = c.nodes.find((n) => n.id === '6')!;
    expect(mul.data.params).toEqual({ scalar: 0.5 });
    expect(c.edges.filter((e) => e.target === '6').map((e) => [e.source, e.targetHandle])).toEqual([['5', 'in:a']]);
    expect(c.edges).toHaveLength(9); // 3: a, b; 4: a; 5: a, b; 6–9: a
  });

  it('keeps a graph input name as the node name', () => {
    const c = docToFlow(example('life_steps'), table);
    expect(c.nodes[0].data.label).toBe('grid');
    expect(c.nodes[0].data.params.carry).toBe('next');
    const back = flowToDoc(c, table) as { nodes: Record<string, unknown>[] };
    expect(back.nodes[0]).toMatchObject({ id: 0, op: 'input', name: 'grid', carry: 'next' });
  });

  it('writes a built graph: added nodes, wires in the order drawn, outputs', () => {
    let c = docToFlow({ format: 'scellis.workflow/1', name: 'g', determinism: 'prod', nodes: [], wires: [], outputs: [] }, table);
    const a = addNode(c, table, 'input', { x: 0, y: 0 });
    c = setParam(a.canvas, a.id, 'shape', [3]);
    const b = addNode(c, table, 'relu', { x: 200, y: 0 });
    c = addEdge(b.canvas, a.id, b.id, 'a');
    c = setOutput(c, b.id, 'values');
    c = setDim(c, 'N', 4);
    expect(flowToDoc(c, table)).toEqual({
      format: 'scellis.workflow/1',
      name: 'g',
      determinism: 'prod',
      dims: { N: 4 },
      nodes: [
        { id: 'input', type: 'input', params: { shape: [3] } },
        { id: 'relu', type: 'relu' },
      ],
      wires: [{ from: 'input', to: 'relu.a' }],
      outputs: [{ name: 'values', from: 'relu' }],
    });
    expect(outputNameOf(c, 'relu')).toBe('values');
  });

  it('gives new graph nodes the next integer id and writes references as numbers', () => {
    let c = docToFlow(example('seed_mul_relu'), table);
    const n = addNode(c, table, 'neg', { x: 0, y: 0 });
    expect(n.id).toBe('4');
    c = addEdge(n.canvas, '3', '4', 'a');
    const doc = flowToDoc(c, table) as { nodes: unknown[] };
    expect(doc.nodes[4]).toEqual({ id: 4, op: 'neg', a: 3 });
  });

  it('removing a node removes its wires and the outputs that read it', () => {
    const c = removeNodes(docToFlow(example('center_columns'), table), ['xc']);
    expect(c.edges.map((e) => e.id)).toEqual(['x->mean.a', 'w->y.b']);
    expect(c.head.outputs).toEqual([{ name: 'y', from: 'y' }]);
  });

  it('setParam with undefined removes the attribute', () => {
    const c = setParam(docToFlow(example('center_columns'), table), 'mean', 'axis', undefined);
    expect(c.nodes[2].data.params).toEqual({});
    expect((flowToDoc(c, table) as { nodes: unknown[] }).nodes[2]).toEqual({ id: 'mean', type: 'mean' });
  });

  it('refuses what is no document', () => {
    expect(() => docToFlow({ nodes: [] }, table)).toThrow(/neither a workflow/);
    expect(() => docToFlow([1], table)).toThrow(/JSON object/);
  });

  it('names handles by port', () => {
    expect(inHandle('target')).toBe('in:target');
  });
});
