// List ports (concat's and stack's `inputs`) on the canvas: one wire per entry, in order; the
// order is the graph's array and a workflow's wire order, it round-trips, and it is reordered by
// moving an entry.
import { describe, expect, it } from 'vitest';
import {
  addEdge,
  docToFlow,
  flowToDoc,
  inHandle,
  listEntries,
  listEntryLabels,
  moveListEntry,
  OUT_HANDLE,
  removeEdges,
  type Canvas,
} from './document';
import { table } from './fixtures';
import { clone, jsonEqual, type JsonObject } from './json';
import { pointerTarget } from './pointer';
import { checkWire } from './wires';

// A graph whose concat lists one node twice, between another (the engine's example form).
const GRAPH: JsonObject = {
  version: 4,
  determinism: 'prod',
  nodes: [
    { id: 0, op: 'input', name: 'a', shape: [2, 3], data: [1, 2, 3, 4, 5, 6] },
    { id: 1, op: 'input', name: 'b', shape: [1, 3], data: [7, 8, 9] },
    { id: 2, op: 'concat', inputs: [1, 0, 1], axis: 0 },
    { id: 3, op: 'stack', inputs: [2, 2] },
    { id: 4, op: 'relu', a: 3 },
  ],
  outputs: [{ name: 'y', id: 4 }],
};

// The same joins as a workflow: the list port is wired once per entry, in wire order, and the
// entries' wires are interleaved with others.
const WORKFLOW: JsonObject = {
  format: 'scellis.workflow/1',
  name: 'joins',
  determinism: 'prod',
  nodes: [
    { id: 'a', type: 'input', params: { shape: [2, 3], data: [1, 2, 3, 4, 5, 6] } },
    { id: 'b', type: 'input', params: { shape: [1, 3], data: [7, 8, 9] } },
    { id: 'cat', type: 'concat', params: { axis: 0 } },
    { id: 'r', type: 'relu' },
  ],
  wires: [
    { from: 'b', to: 'cat.inputs' },
    { from: 'a', to: 'cat.inputs' },
    { from: 'cat', to: 'r.a' },
    { from: 'b', to: 'cat.inputs' },
  ],
  outputs: [{ name: 'y', from: 'r' }],
};

const sources = (c: Canvas, target: string) => listEntries(c, target, 'inputs').map((e) => e.source);

describe('list ports', () => {
  it('reads the op table\'s list ports', () => {
    expect(table.byName.get('concat')?.inputs[0]).toMatchObject({ name: 'inputs', list: true });
    expect(table.byName.get('add')?.inputs.some((p) => p.list)).toBe(false);
  });

  it('reads a graph\'s list as one wire per entry, in order, repeats included', () => {
    const c = docToFlow(GRAPH, table);
    expect(sources(c, '2')).toEqual(['1', '0', '1']);
    expect(sources(c, '3')).toEqual(['2', '2']);
    expect(new Set(c.edges.map((e) => e.id)).size).toBe(c.edges.length); // React Flow needs unique ids
    expect(c.nodes.find((n) => n.id === '2')!.data.params).toEqual({ axis: 0 });
  });

  it('writes a graph\'s list back as the same array: the document round-trips', () => {
    const back = flowToDoc(docToFlow(GRAPH, table), table);
    expect(back).toEqual(GRAPH);
    expect(jsonEqual(back, GRAPH)).toBe(true);
  });

  it('writes a one-entry list as an array', () => {
    const doc = clone(GRAPH) as { nodes: JsonObject[] };
    doc.nodes[2].inputs = [0];
    const back = flowToDoc(docToFlow(doc, table), table) as { nodes: JsonObject[] };
    expect(back.nodes[2].inputs).toEqual([0]);
  });

  it('round-trips a workflow\'s list wires in their order, interleaved with others', () => {
    const c = docToFlow(WORKFLOW, table);
    expect(sources(c, 'cat')).toEqual(['b', 'a', 'b']);
    expect(flowToDoc(c, table)).toEqual(WORKFLOW);
    expect(Object.keys(flowToDoc(c, table))).toEqual(Object.keys(WORKFLOW));
  });

  it('reorders entries by moving one; the saved documents follow and other wires keep their places', () => {
    const c = moveListEntry(docToFlow(WORKFLOW, table), 'cat', 'inputs', 2, 0);
    expect(sources(c, 'cat')).toEqual(['b', 'b', 'a']);
    expect((flowToDoc(c, table) as { wires: JsonObject[] }).wires).toEqual([
      { from: 'b', to: 'cat.inputs' },
      { from: 'b', to: 'cat.inputs' },
      { from: 'cat', to: 'r.a' },
      { from: 'a', to: 'cat.inputs' },
    ]);
    const down = moveListEntry(docToFlow(GRAPH, table), '2', 'inputs', 0, 1);
    expect((flowToDoc(down, table) as { nodes: JsonObject[] }).nodes[2]).toEqual({ id: 2, op: 'concat', inputs: [0, 1, 1], axis: 0 });
    // Out of range, or to where it is: the same canvas.
    const same = docToFlow(GRAPH, table);
    expect(moveListEntry(same, '2', 'inputs', 0, 3)).toBe(same);
    expect(moveListEntry(same, '2', 'inputs', 1, 1)).toBe(same);
  });

  it('labels each entry\'s wire with its place', () => {
    const c = docToFlow(WORKFLOW, table);
    const labels = listEntryLabels(c, table);
    expect(listEntries(c, 'cat', 'inputs').map((e) => labels.get(e.id))).toEqual(['inputs[0]', 'inputs[1]', 'inputs[2]']);
    expect(labels.size).toBe(3); // r.a is not a list port
  });

  it('takes several wires into a list port, the same source again too, and one into any other', () => {
    let c = docToFlow(WORKFLOW, table);
    const wire = (cv: Canvas, source: string, target: string, port: string) =>
      checkWire(cv, table, { source, sourceHandle: OUT_HANDLE, target, targetHandle: inHandle(port) });
    expect(wire(c, 'a', 'cat', 'inputs')).toEqual({ ok: true, source: 'a', target: 'cat', port: 'inputs' });
    c = addEdge(c, 'a', 'cat', 'inputs');
    expect(sources(c, 'cat')).toEqual(['b', 'a', 'b', 'a']);
    expect(new Set(c.edges.map((e) => e.id)).size).toBe(c.edges.length);
    expect(wire(c, 'a', 'r', 'a')).toEqual({ ok: false, reason: 'r.a already has a wire (from cat)' });
    // Removing one entry leaves the others in order.
    c = removeEdges(c, [listEntries(c, 'cat', 'inputs')[1].id]);
    expect(sources(c, 'cat')).toEqual(['b', 'b', 'a']);
  });

  it('places a diagnostic on the list entry its pointer names', () => {
    const c = docToFlow(GRAPH, table);
    const entries = listEntries(c, '2', 'inputs');
    expect(pointerTarget('/nodes/2/inputs/1', c)).toEqual({ kind: 'edge', id: entries[1].id });
    expect(pointerTarget('/nodes/2/inputs/2', c)).toEqual({ kind: 'edge', id: entries[2].id });
    expect(pointerTarget('/nodes/2/inputs/7', c)).toEqual({ kind: 'node', id: '2' });
  });

  it('keeps an empty list as the document had it, for the engine to name', () => {
    const doc = clone(GRAPH) as { nodes: JsonObject[] };
    doc.nodes[2].inputs = [];
    const c = docToFlow(doc, table);
    expect(sources(c, '2')).toEqual([]);
    expect(flowToDoc(c, table)).toEqual(doc);
    // Wiring an entry replaces the empty list.
    const wired = flowToDoc(addEdge(c, '0', '2', 'inputs'), table) as { nodes: JsonObject[] };
    expect(wired.nodes[2].inputs).toEqual([0]);
  });
});
