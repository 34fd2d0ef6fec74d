// Node positions are the canvas's own business: the engine's document format refuses unknown
// fields, so positions never enter the document. A document opens with an automatic layered
// layout (each node one column right of its deepest input); positions the user drags are kept in
// the browser's local storage under the document's content id, and follow the document as its
// content id changes with each edit.
import type { Canvas, FlowEdge, FlowNode } from './document';

export type Positions = Record<string, { x: number; y: number }>;

export const COLUMN_WIDTH = 290;
export const ROW_HEIGHT = 120;

export function layeredLayout(nodes: FlowNode[], edges: FlowEdge[]): Positions {
  const ids = nodes.map((n) => n.id);
  const inputs = new Map<string, string[]>();
  for (const id of ids) inputs.set(id, []);
  for (const e of edges) inputs.get(e.target)?.push(e.source);
  const layer = new Map<string, number>();
  const visiting = new Set<string>();
  const depth = (id: string): number => {
    const known = layer.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0; // a cycle: validation names it; the layout just stops
    visiting.add(id);
    let d = 0;
    for (const s of inputs.get(id) ?? []) if (inputs.has(s)) d = Math.max(d, depth(s) + 1);
    visiting.delete(id);
    layer.set(id, d);
    return d;
  };
  const rows = new Map<number, number>();
  const out: Positions = {};
  for (const id of ids) {
    const d = depth(id);
    const row = rows.get(d) ?? 0;
    rows.set(d, row + 1);
    out[id] = { x: 40 + d * COLUMN_WIDTH, y: 40 + row * ROW_HEIGHT };
  }
  return out;
}

export function withPositions(canvas: Canvas, stored: Positions | null): Canvas {
  const auto = layeredLayout(canvas.nodes, canvas.edges);
  return {
    ...canvas,
    nodes: canvas.nodes.map((n) => ({ ...n, position: stored?.[n.id] ?? auto[n.id] ?? n.position })),
  };
}

export function positionsOf(canvas: Canvas): Positions {
  const out: Positions = {};
  for (const n of canvas.nodes) out[n.id] = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
  return out;
}

interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

const KEY = (contentId: string) => `scellis.layout:${contentId}`;

export function loadLayout(store: KeyValueStore | undefined, contentId: string): Positions | null {
  if (!store) return null;
  try {
    const v = store.getItem(KEY(contentId));
    return v ? (JSON.parse(v) as Positions) : null;
  } catch {
    return null;
  }
}

export function saveLayout(store: KeyValueStore | undefined, contentId: string, positions: Positions): void {
  if (!store) return;
  try {
    store.setItem(KEY(contentId), JSON.stringify(positions));
  } catch {
    // A full or disabled storage costs only the positions; the document is untouched.
  }
}
