import { describe, expect, it } from 'vitest';
import { addNode, docToFlow, inHandle, OUT_HANDLE, setParam, type Canvas } from './document';
import { example, table } from './fixtures';
import { checkWire, outputDtypes } from './wires';

const wire = (c: Canvas, source: string, target: string, port: string) =>
  checkWire(c, table, { source, sourceHandle: OUT_HANDLE, target, targetHandle: inHandle(port) });

describe('typed wires', () => {
  const cc = docToFlow(example('center_columns'), table);

  it('accepts an output into a free input of a matching dtype', () => {
    const c = { ...cc, edges: cc.edges.filter((e) => e.target !== 'y') };
    expect(wire(c, 'xc', 'y', 'a')).toEqual({ ok: true, source: 'xc', target: 'y', port: 'a' });
  });

  it('accepts a drag that starts at the input', () => {
    const c = { ...cc, edges: cc.edges.filter((e) => e.target !== 'y') };
    expect(checkWire(c, table, { source: 'y', sourceHandle: inHandle('a'), target: 'xc', targetHandle: OUT_HANDLE })).toMatchObject({ ok: true, source: 'xc', target: 'y' });
  });

  it('refuses a second wire into one input', () => {
    expect(wire(cc, 'w', 'y', 'a')).toEqual({ ok: false, reason: 'y.a already has a wire (from xc)' });
  });

  it('refuses an output to an output and an input to an input', () => {
    expect(checkWire(cc, table, { source: 'x', sourceHandle: OUT_HANDLE, target: 'w', targetHandle: OUT_HANDLE })).toEqual({ ok: false, reason: 'an output cannot feed an output' });
    expect(checkWire(cc, table, { source: 'y', sourceHandle: inHandle('a'), target: 'xc', targetHandle: inHandle('b') })).toEqual({ ok: false, reason: 'an input cannot feed an input' });
  });

  it('refuses dtype sets that do not intersect', () => {
    const a = addNode(cc, table, 'input', { x: 0, y: 0 });
    const c = setParam(a.canvas, a.id, 'dtype', 'i32');
    const r = wire({ ...c, edges: c.edges.filter((e) => e.target !== 'y') }, a.id, 'y', 'a');
    expect(r).toEqual({ ok: false, reason: 'input gives i32, but y.a takes f32' });
  });

  it('passes a dtype through data-movement ops', () => {
    const a = addNode(cc, table, 'input', { x: 0, y: 0 });
    let c = setParam(a.canvas, a.id, 'dtype', 'i32');
    const t = addNode(c, table, 'transpose', { x: 0, y: 0 });
    c = { ...t.canvas, edges: [...t.canvas.edges, { id: 'e', source: a.id, target: t.id, sourceHandle: OUT_HANDLE, targetHandle: inHandle('a') }] };
    expect(outputDtypes(c, table, t.id)).toEqual(['i32']);
    expect(wire({ ...c, edges: c.edges.filter((e) => e.target !== 'y') }, t.id, 'y', 'a').ok).toBe(false);
    expect(outputDtypes(cc, table, 'x')).toEqual(['f32']);
  });

  it('refuses a cycle, a self-wire and a port the op lacks', () => {
    expect(wire(cc, 'y', 'mean', 'b')).toEqual({ ok: false, reason: 'mean has no input "b"' });
    const free = { ...cc, edges: cc.edges.filter((e) => e.target !== 'mean') };
    expect(wire(free, 'xc', 'mean', 'a')).toEqual({ ok: false, reason: 'the wire would close a cycle (mean already feeds xc)' });
    expect(wire(free, 'mean', 'mean', 'a')).toEqual({ ok: false, reason: 'a node cannot feed itself' });
  });
});
