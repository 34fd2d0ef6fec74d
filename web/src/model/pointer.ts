// Engine diagnostics point into the document with JSON pointers. The canvas shows each one on
// what it names: /nodes/3 (and anything under it) is the 4th node; /wires/2 is that wire; in a
// graph, /nodes/3/a is the wire into port a of the 4th node and /nodes/3/inputs/1 the second
// entry of its list port `inputs`; /outputs/1 is the node that output
// reads; /dims/N is the dimension N. The rest (/determinism, /train/..., "") is the document.
import { isObject } from './json';
import { portOfHandle, type Canvas } from './document';

export type Target =
  | { kind: 'node'; id: string }
  | { kind: 'edge'; id: string }
  | { kind: 'dim'; name: string }
  | { kind: 'document' };

export function splitPointer(pointer: string): string[] {
  if (pointer === '' || pointer === '/') return [];
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

// Where a diagnostic goes; `canvas` must be the one whose document was validated (node and wire
// order are the document's).
export function pointerTarget(pointer: string | null | undefined, canvas: Canvas): Target {
  if (!pointer) return { kind: 'document' };
  const [head, index, field, entry] = splitPointer(pointer);
  const i = Number(index);
  if (head === 'nodes' && Number.isInteger(i) && i >= 0 && i < canvas.nodes.length) {
    const node = canvas.nodes[i];
    if (canvas.form === 'graph' && field !== undefined) {
      const wires = canvas.edges.filter((e) => e.target === node.id && portOfHandle(e.targetHandle) === field);
      const k = entry === undefined ? 0 : Number(entry);
      const edge = Number.isInteger(k) ? wires[k] : undefined;
      if (edge) return { kind: 'edge', id: edge.id };
    }
    return { kind: 'node', id: node.id };
  }
  if (head === 'wires' && canvas.form === 'workflow' && Number.isInteger(i) && i >= 0 && i < canvas.edges.length) {
    return { kind: 'edge', id: canvas.edges[i].id };
  }
  if (head === 'outputs' && Number.isInteger(i) && Array.isArray(canvas.head.outputs)) {
    const o = canvas.head.outputs[i];
    const key = canvas.form === 'workflow' ? 'from' : 'id';
    if (isObject(o) && o[key] !== undefined) {
      const id = String(o[key]).split('.')[0];
      if (canvas.nodes.some((n) => n.id === id)) return { kind: 'node', id };
    }
  }
  if (head === 'dims' && index !== undefined) return { kind: 'dim', name: index };
  return { kind: 'document' };
}

export interface Diag {
  code: string;
  severity: 'error' | 'warning' | 'note';
  pointer: string | null;
  message: string;
  help?: string | null;
  node?: string | null;
}

export interface PlacedDiags {
  byNode: Map<string, Diag[]>;
  byEdge: Map<string, Diag[]>;
  byDim: Map<string, Diag[]>;
  document: Diag[];
}

export function placeDiagnostics(diags: Diag[], canvas: Canvas): PlacedDiags {
  const out: PlacedDiags = { byNode: new Map(), byEdge: new Map(), byDim: new Map(), document: [] };
  const add = <K>(m: Map<K, Diag[]>, k: K, d: Diag) => m.set(k, [...(m.get(k) ?? []), d]);
  for (const d of diags) {
    const t = pointerTarget(d.pointer, canvas);
    if (t.kind === 'node') add(out.byNode, t.id, d);
    else if (t.kind === 'edge') add(out.byEdge, t.id, d);
    else if (t.kind === 'dim') add(out.byDim, t.name, d);
    else if (d.node && canvas.nodes.some((n) => n.id === d.node)) add(out.byNode, d.node, d);
    else out.document.push(d);
  }
  return out;
}

// Reads a diagnostic from whatever the server sent, defaulting what is missing.
export function toDiag(v: unknown): Diag | null {
  if (!isObject(v)) return null;
  const sev = v.severity === 'warning' || v.severity === 'note' ? v.severity : 'error';
  return {
    code: typeof v.code === 'string' ? v.code : 'error',
    severity: sev,
    pointer: typeof v.pointer === 'string' ? v.pointer : null,
    message: typeof v.message === 'string' ? v.message : JSON.stringify(v),
    help: typeof v.help === 'string' ? v.help : null,
    node: typeof v.node === 'string' ? v.node : null,
  };
}
