// Which canvas nodes each kernel came from, and which kernel each plan step runs. The server's
// /api/rungs sends provenance links; where a link is absent the same answer is read from the
// rungs themselves (a kernel lists its WebIR nodes, a WebIR node its document pointer), so the
// highlight never depends on one field name.
import { isObject } from './json';
import type { Canvas } from './document';
import { pointerTarget } from './pointer';

export interface KernelLink {
  name: string;
  docNodes: string[];
}

export interface Provenance {
  kernels: KernelLink[];
  steps: { index: number; kernel: string }[];
}

function docNodeId(ref: unknown, canvas: Canvas): string | null {
  if (typeof ref === 'number') ref = String(ref);
  if (typeof ref !== 'string') return null;
  if (ref.startsWith('/')) {
    const t = pointerTarget(ref, canvas);
    if (t.kind === 'node') return t.id;
    if (t.kind === 'edge') return canvas.edges.find((e) => e.id === t.id)?.target ?? null;
    return null;
  }
  return canvas.nodes.some((n) => n.id === ref) ? ref : null;
}

function uniq(xs: (string | null)[]): string[] {
  return [...new Set(xs.filter((x): x is string => x !== null))];
}

function rungJson(rungs: unknown, name: string): Record<string, unknown> | null {
  if (!isObject(rungs)) return null;
  const r = rungs[name];
  if (!isObject(r)) return null;
  return isObject(r.json) ? r.json : null;
}

function fromRungs(rungs: unknown, canvas: Canvas): KernelLink[] {
  const kernel = rungJson(rungs, 'kernel');
  const webir = rungJson(rungs, 'webir');
  if (!kernel || !Array.isArray(kernel.kernels)) return [];
  const webirNodes = webir && Array.isArray(webir.nodes) ? webir.nodes : [];
  const originOf = (id: unknown): string | null => {
    const n = webirNodes.find((w) => isObject(w) && w.id === id);
    return isObject(n) && typeof n.origin === 'string' ? docNodeId(n.origin, canvas) : null;
  };
  return kernel.kernels
    .filter(isObject)
    .map((k) => ({
      name: String(k.name),
      docNodes: uniq((Array.isArray(k.nodes) ? k.nodes : [k.output]).map(originOf)),
    }));
}

function fromLinks(links: unknown, canvas: Canvas): KernelLink[] | null {
  if (!isObject(links)) return null;
  const ks = links.kernels;
  const read = (name: string, v: unknown): KernelLink => {
    let refs: unknown[] = [];
    if (Array.isArray(v)) refs = v;
    else if (isObject(v)) {
      const d = v.doc ?? v.doc_nodes ?? v.document ?? v.document_nodes ?? v.nodes;
      refs = Array.isArray(d) ? d : [];
    }
    return { name, docNodes: uniq(refs.map((r) => docNodeId(r, canvas))) };
  };
  if (Array.isArray(ks)) {
    return ks.filter(isObject).map((k) => read(String(k.kernel ?? k.name), k));
  }
  if (isObject(ks)) return Object.entries(ks).map(([name, v]) => read(name, v));
  return null;
}

function stepsOf(rungs: unknown, links: unknown): { index: number; kernel: string }[] {
  if (isObject(links)) {
    const s = links.steps;
    if (Array.isArray(s)) {
      return s.map((v, i) =>
        isObject(v)
          ? { index: typeof v.step === 'number' ? v.step : i, kernel: String(v.kernel ?? v.name) }
          : { index: i, kernel: String(v) },
      );
    }
    if (isObject(s)) return Object.entries(s).map(([k, v]) => ({ index: Number(k), kernel: String(isObject(v) ? v.kernel : v) }));
  }
  const plan = rungJson(rungs, 'execplan');
  if (plan && Array.isArray(plan.steps))
    return plan.steps.map((s, i) => ({ index: i, kernel: isObject(s) ? String(s.kernel) : String(s) }));
  return [];
}

export function provenance(response: unknown, canvas: Canvas): Provenance {
  const r = isObject(response) ? response : {};
  const derived = fromRungs(r.rungs, canvas);
  const linked = fromLinks(r.links, canvas);
  let kernels = derived;
  if (linked && linked.length > 0) {
    // Prefer the server's links; keep a derived answer for a kernel the links leave empty.
    kernels = linked.map((k) =>
      k.docNodes.length > 0 ? k : (derived.find((d) => d.name === k.name) ?? k),
    );
  }
  return { kernels, steps: stepsOf(r.rungs, r.links) };
}

export function nodesOfKernel(p: Provenance, kernel: string): string[] {
  return p.kernels.find((k) => k.name === kernel)?.docNodes ?? [];
}

export function kernelsOfNode(p: Provenance, nodeId: string): string[] {
  return p.kernels.filter((k) => k.docNodes.includes(nodeId)).map((k) => k.name);
}
