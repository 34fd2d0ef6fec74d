// The canvas edits the engine's own document (examples/*.json): a workflow
// ({"format": "scellis.workflow/1", nodes with "type" and "params", "wires"}) or a graph of the
// plain-data protocol ({"version": 1, nodes with "op" and their inputs named by port}).
// docToFlow turns either into nodes and edges for the canvas; flowToDoc turns them back into the
// same form. Nothing of the canvas's own (positions, selection) goes into the document: the
// engine refuses unknown fields, so positions live in a layout beside it (see layout.ts).
import { clone, isObject, type Json, type JsonObject } from './json';
import { isListPort, type OpTable } from './optable';

export type DocForm = 'workflow' | 'graph';

export interface NodeData extends Record<string, unknown> {
  op: string;
  params: JsonObject;
  label?: string;
  // Node fields the canvas does not edit but must keep: "determinism", "tolerance".
  extra: JsonObject;
}

export interface FlowNode {
  id: string;
  type: 'op';
  position: { x: number; y: number };
  data: NodeData;
}

export interface FlowEdge {
  id: string;
  source: string;
  target: string;
  sourceHandle: string;
  targetHandle: string;
}

export interface Canvas {
  form: DocForm;
  // Every top-level field but "nodes" and "wires", in the document's order.
  head: JsonObject;
  nodes: FlowNode[];
  edges: FlowEdge[];
}

export const OUT_HANDLE = 'out';
export const inHandle = (port: string) => `in:${port}`;
export const portOfHandle = (handle: string | null | undefined): string | null =>
  handle && handle.startsWith('in:') ? handle.slice(3) : null;
export const edgeId = (source: string, target: string, port: string) => `${source}->${target}.${port}`;

// A list port's entries may repeat a source (concat of [a, a]): the second wire of one source into
// one port is told apart by a count.
function freshEdgeId(taken: Set<string>, source: string, target: string, port: string): string {
  const base = edgeId(source, target, port);
  let id = base;
  for (let k = 2; taken.has(id); ++k) id = `${base}#${k}`;
  taken.add(id);
  return id;
}

const GRAPH_NODE_FIELDS = ['id', 'op', 'name', 'determinism', 'tolerance'];
const WORKFLOW_NODE_FIELDS = ['id', 'type', 'params', 'label', 'determinism', 'tolerance'];

export class DocumentShapeError extends Error {}

export function documentForm(doc: unknown): DocForm {
  if (!isObject(doc)) throw new DocumentShapeError('a document is a JSON object');
  if ('format' in doc) return 'workflow';
  if ('version' in doc) return 'graph';
  throw new DocumentShapeError(
    'neither a workflow ("format": "scellis.workflow/1") nor a graph ("version": 1)',
  );
}

// Mirrors the engine's rule for graph nodes: a field is an input when it is a port of the node's
// op, or a port of some op and not an attribute of this one. A reference holding an array is a
// list port's entries (one wire each, in list order).
function isReference(table: OpTable, op: string, key: string): boolean {
  const spec = table.byName.get(op);
  if (spec?.inputs.some((p) => p.name === key)) return true;
  if (spec?.attrs.some((a) => a.name === key)) return false;
  return table.list.some((s) => s.inputs.some((p) => p.name === key));
}

function pick(o: JsonObject, keys: string[]): JsonObject {
  const out: JsonObject = {};
  for (const k of keys) if (k in o) out[k] = clone(o[k]);
  return out;
}

export function docToFlow(doc: unknown, table: OpTable): Canvas {
  const form = documentForm(doc);
  const d = doc as JsonObject;
  const head: JsonObject = {};
  for (const [k, v] of Object.entries(d)) if (k !== 'nodes' && k !== 'wires') head[k] = clone(v);
  const rawNodes = Array.isArray(d.nodes) ? d.nodes : [];
  const nodes: FlowNode[] = [];
  const edges: FlowEdge[] = [];
  const taken = new Set<string>();
  const wire = (source: string, target: string, port: string) =>
    edges.push({
      id: freshEdgeId(taken, source, target, port),
      source,
      target,
      sourceHandle: OUT_HANDLE,
      targetHandle: inHandle(port),
    });
  if (form === 'workflow') {
    for (const n of rawNodes) {
      if (!isObject(n)) continue;
      const id = typeof n.id === 'string' ? n.id : String(n.id);
      nodes.push({
        id,
        type: 'op',
        position: { x: 0, y: 0 },
        data: {
          op: typeof n.type === 'string' ? n.type : String(n.type),
          params: isObject(n.params) ? clone(n.params) : {},
          ...(typeof n.label === 'string' ? { label: n.label } : {}),
          extra: pick(
            n,
            Object.keys(n).filter((k) => !['id', 'type', 'params', 'label'].includes(k)),
          ),
        },
      });
    }
    const wires = Array.isArray(d.wires) ? d.wires : [];
    for (const w of wires) {
      if (!isObject(w) || typeof w.from !== 'string' || typeof w.to !== 'string') continue;
      const source = w.from.split('.')[0];
      const dot = w.to.indexOf('.');
      const target = dot < 0 ? w.to : w.to.slice(0, dot);
      const port = dot < 0 ? '' : w.to.slice(dot + 1);
      wire(source, target, port);
    }
  } else {
    for (const n of rawNodes) {
      if (!isObject(n)) continue;
      const id = String(n.id);
      const op = typeof n.op === 'string' ? n.op : String(n.op);
      const params: JsonObject = {};
      for (const [k, v] of Object.entries(n)) {
        if (GRAPH_NODE_FIELDS.includes(k)) continue;
        if (isReference(table, op, k) && typeof v === 'number') {
          wire(String(v), id, k);
        } else if (isReference(table, op, k) && Array.isArray(v) && v.length > 0 && v.every((r) => typeof r === 'number')) {
          for (const r of v) wire(String(r), id, k);
        } else {
          params[k] = clone(v);
        }
      }
      nodes.push({
        id,
        type: 'op',
        position: { x: 0, y: 0 },
        data: {
          op,
          params,
          ...(typeof n.name === 'string' ? { label: n.name } : {}),
          extra: pick(n, ['determinism', 'tolerance']),
        },
      });
    }
  }
  return { form, head, nodes, edges };
}

export function flowToDoc(canvas: Canvas, table?: OpTable): JsonObject {
  const doc: JsonObject = {};
  const entries = Object.entries(canvas.head);
  const nodes: Json[] = [];
  if (canvas.form === 'workflow') {
    for (const n of canvas.nodes) {
      const o: JsonObject = { id: n.id, type: n.data.op };
      if (n.data.label !== undefined) o.label = n.data.label;
      if (Object.keys(n.data.params).length > 0) o.params = clone(n.data.params);
      for (const [k, v] of Object.entries(n.data.extra))
        if (WORKFLOW_NODE_FIELDS.includes(k) || !(k in o)) o[k] = clone(v);
      nodes.push(o);
    }
  } else {
    for (const n of canvas.nodes) {
      const asNumber = Number(n.id);
      const o: JsonObject = { id: Number.isInteger(asNumber) ? asNumber : n.id, op: n.data.op };
      if (n.data.label !== undefined) o.name = n.data.label;
      const spec = table?.byName.get(n.data.op);
      const incoming = canvas.edges.filter((e) => e.target === n.id);
      // Inputs in the op's port order, so a written graph reads like the examples.
      const ordered = spec
        ? [...incoming].sort(
            (a, b) =>
              spec.inputs.findIndex((p) => inHandle(p.name) === a.targetHandle) -
              spec.inputs.findIndex((p) => inHandle(p.name) === b.targetHandle),
          )
        : incoming;
      const wired = new Set<string>();
      for (const e of ordered) {
        const port = portOfHandle(e.targetHandle);
        if (!port) continue;
        const src = Number(e.source);
        const ref = Number.isInteger(src) ? src : e.source;
        // A list port holds its wires' sources as an array, in wire order; so does any port with
        // more than one wire (the engine then names the port that takes one).
        const entries = incoming.filter((x) => x.targetHandle === e.targetHandle).length;
        if (isListPort(table, n.data.op, port) || entries > 1) {
          const list = Array.isArray(o[port]) ? (o[port] as Json[]) : [];
          o[port] = [...list, ref];
        } else {
          o[port] = ref;
        }
        wired.add(port);
      }
      // A parameter of a wired port's name (an empty list read from the document) yields to
      // the wires.
      for (const [k, v] of Object.entries(n.data.params)) if (!wired.has(k)) o[k] = clone(v);
      for (const [k, v] of Object.entries(n.data.extra)) o[k] = clone(v);
      nodes.push(o);
    }
  }
  // Keep the document's key order: nodes (and wires) where they stood, else after the head.
  let placed = false;
  for (const [k, v] of entries) {
    if (!placed && (k === 'outputs' || k === 'train')) {
      doc.nodes = nodes;
      if (canvas.form === 'workflow') doc.wires = wiresOf(canvas);
      placed = true;
    }
    doc[k] = clone(v);
  }
  if (!placed) {
    doc.nodes = nodes;
    if (canvas.form === 'workflow') doc.wires = wiresOf(canvas);
  }
  return doc;
}

function wiresOf(canvas: Canvas): Json[] {
  return canvas.edges.map((e) => ({ from: e.source, to: `${e.target}.${portOfHandle(e.targetHandle) ?? ''}` }));
}

// ---- edits: pure functions from one canvas to the next -------------------------------------

export function newNodeId(canvas: Canvas, op: string): string {
  const taken = new Set(canvas.nodes.map((n) => n.id));
  if (canvas.form === 'graph') {
    let max = -1;
    for (const n of canvas.nodes) {
      const v = Number(n.id);
      if (Number.isInteger(v)) max = Math.max(max, v);
    }
    return String(max + 1);
  }
  const base = op.replace(/[^A-Za-z0-9_-]/g, '_') || 'node';
  if (!taken.has(base)) return base;
  for (let i = 2; ; ++i) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

export function addNode(
  canvas: Canvas,
  table: OpTable,
  op: string,
  position: { x: number; y: number },
): { canvas: Canvas; id: string } {
  const id = newNodeId(canvas, op);
  const spec = table.byName.get(op);
  const params: JsonObject = {};
  // Required attributes that have a default start with it; the rest stay unset and validation
  // names what is missing.
  for (const a of spec?.attrs ?? []) if (a.required && a.default !== null) params[a.name] = clone(a.default);
  const node: FlowNode = { id, type: 'op', position, data: { op, params, extra: {} } };
  return { canvas: { ...canvas, nodes: [...canvas.nodes, node] }, id };
}

export function removeNodes(canvas: Canvas, ids: string[]): Canvas {
  const gone = new Set(ids);
  const head = clone(canvas.head);
  if (Array.isArray(head.outputs)) {
    const key = canvas.form === 'workflow' ? 'from' : 'id';
    head.outputs = head.outputs.filter(
      (o) => !(isObject(o) && gone.has(String(o[key]).split('.')[0])),
    );
  }
  return {
    ...canvas,
    head,
    nodes: canvas.nodes.filter((n) => !gone.has(n.id)),
    edges: canvas.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target)),
  };
}

export function removeEdges(canvas: Canvas, ids: string[]): Canvas {
  const gone = new Set(ids);
  return { ...canvas, edges: canvas.edges.filter((e) => !gone.has(e.id)) };
}

export function addEdge(canvas: Canvas, source: string, target: string, port: string): Canvas {
  const edge: FlowEdge = {
    id: freshEdgeId(new Set(canvas.edges.map((e) => e.id)), source, target, port),
    source,
    target,
    sourceHandle: OUT_HANDLE,
    targetHandle: inHandle(port),
  };
  return { ...canvas, edges: [...canvas.edges, edge] };
}

// A list port's entries: the wires into `port` of `target`, in list order (their order among the
// canvas's wires, which is the order a workflow lists them and a graph's array holds them).
export function listEntries(canvas: Canvas, target: string, port: string): FlowEdge[] {
  return canvas.edges.filter((e) => e.target === target && portOfHandle(e.targetHandle) === port);
}

// Moves the list entry at `from` to `to` (both positions in listEntries); the other wires keep
// their places.
export function moveListEntry(canvas: Canvas, target: string, port: string, from: number, to: number): Canvas {
  const entries = listEntries(canvas, target, port);
  if (from === to || from < 0 || to < 0 || from >= entries.length || to >= entries.length) return canvas;
  const order = [...entries];
  const [moved] = order.splice(from, 1);
  order.splice(to, 0, moved);
  let k = 0;
  const edges = canvas.edges.map((e) => (e.target === target && portOfHandle(e.targetHandle) === port ? order[k++] : e));
  return { ...canvas, edges };
}

// Each list entry's place, as the canvas labels its wire ("inputs[0]", "inputs[1]", ...), by
// edge id.
export function listEntryLabels(canvas: Canvas, table: OpTable | null): Map<string, string> {
  const out = new Map<string, string>();
  const opOf = new Map(canvas.nodes.map((n) => [n.id, n.data.op]));
  const counts = new Map<string, number>();
  for (const e of canvas.edges) {
    const port = portOfHandle(e.targetHandle);
    const op = opOf.get(e.target);
    if (!port || op === undefined || !isListPort(table, op, port)) continue;
    const key = `${e.target}.${port}`;
    const k = counts.get(key) ?? 0;
    counts.set(key, k + 1);
    out.set(e.id, `${port}[${k}]`);
  }
  return out;
}

export function setParam(canvas: Canvas, nodeId: string, name: string, value: Json | undefined): Canvas {
  return {
    ...canvas,
    nodes: canvas.nodes.map((n) => {
      if (n.id !== nodeId) return n;
      const params = { ...n.data.params };
      if (value === undefined) delete params[name];
      else params[name] = clone(value);
      return { ...n, data: { ...n.data, params } };
    }),
  };
}

export function setLabel(canvas: Canvas, nodeId: string, label: string | undefined): Canvas {
  return {
    ...canvas,
    nodes: canvas.nodes.map((n) => {
      if (n.id !== nodeId) return n;
      const data = { ...n.data };
      if (label === undefined || label === '') delete data.label;
      else data.label = label;
      return { ...n, data };
    }),
  };
}

export function dimsOf(canvas: Canvas): Record<string, number> {
  const dims = canvas.head.dims;
  const out: Record<string, number> = {};
  if (isObject(dims)) for (const [k, v] of Object.entries(dims)) if (typeof v === 'number') out[k] = v;
  return out;
}

// Symbolic dims a node's shape names (["N", 3] → ["N"]).
export function symbolsOf(node: FlowNode): string[] {
  const shape = node.data.params.shape;
  return Array.isArray(shape) ? shape.filter((s): s is string => typeof s === 'string') : [];
}

export function setDim(canvas: Canvas, name: string, value: number | undefined): Canvas {
  const head = clone(canvas.head);
  const dims: JsonObject = isObject(head.dims) ? head.dims : {};
  if (value === undefined) delete dims[name];
  else dims[name] = value;
  if (Object.keys(dims).length === 0 && value === undefined) delete head.dims;
  else head.dims = dims;
  return { ...canvas, head: canvas.form === 'workflow' ? reorderHead(head) : head };
}

// A workflow's dims come before its nodes, as in the examples.
function reorderHead(head: JsonObject): JsonObject {
  const order = ['format', 'name', 'determinism', 'tolerance', 'budget', 'dims'];
  const out: JsonObject = {};
  for (const k of order) if (k in head) out[k] = head[k];
  for (const [k, v] of Object.entries(head)) if (!(k in out)) out[k] = v;
  return out;
}

export function outputNameOf(canvas: Canvas, nodeId: string): string | null {
  const outs = canvas.head.outputs;
  if (!Array.isArray(outs)) return null;
  const key = canvas.form === 'workflow' ? 'from' : 'id';
  for (const o of outs)
    if (isObject(o) && String(o[key]).split('.')[0] === nodeId && typeof o.name === 'string') return o.name;
  return null;
}

export function setOutput(canvas: Canvas, nodeId: string, name: string | null): Canvas {
  const head = clone(canvas.head);
  const key = canvas.form === 'workflow' ? 'from' : 'id';
  const outs = (Array.isArray(head.outputs) ? head.outputs : []).filter(
    (o) => !(isObject(o) && String(o[key]).split('.')[0] === nodeId),
  );
  if (name) {
    const ref: Json = canvas.form === 'workflow' ? nodeId : Number.isInteger(Number(nodeId)) ? Number(nodeId) : nodeId;
    outs.push({ name, [key]: ref });
  }
  head.outputs = outs;
  return { ...canvas, head };
}

export function moveNodes(canvas: Canvas, positions: Record<string, { x: number; y: number }>): Canvas {
  return {
    ...canvas,
    nodes: canvas.nodes.map((n) => (positions[n.id] ? { ...n, position: positions[n.id] } : n)),
  };
}

export function emptyWorkflow(name = 'untitled'): JsonObject {
  return {
    format: 'scellis.workflow/1',
    name,
    determinism: 'prod',
    tolerance: 'default',
    dims: {},
    nodes: [],
    wires: [],
    outputs: [],
  };
}
