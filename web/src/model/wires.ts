// Typed ports: whether a wire may be drawn, and if not, why. The canvas asks while the user drags,
// so a wrong wire is refused as it is drawn, with its reason shown.
import { OUT_HANDLE, portOfHandle, type Canvas, type FlowNode } from './document';
import { ALL_DTYPES, isSourceOp, type OpTable } from './optable';

export interface Attempt {
  source: string | null;
  sourceHandle: string | null;
  target: string | null;
  targetHandle: string | null;
}

export type WireCheck =
  | { ok: true; source: string; target: string; port: string }
  | { ok: false; reason: string };

function nodeOf(canvas: Canvas, id: string | null): FlowNode | undefined {
  return canvas.nodes.find((n) => n.id === id);
}

// The dtypes a node's output may carry. A source's is its "dtype" parameter; an op that declares
// its output dtypes has them; an op whose inputs accept any dtype (data movement) passes on what
// flows into its first input.
export function outputDtypes(canvas: Canvas, table: OpTable, nodeId: string, seen = new Set<string>()): string[] {
  const node = nodeOf(canvas, nodeId);
  if (!node) return [];
  const spec = table.byName.get(node.data.op);
  if (!spec) return ALL_DTYPES;
  if (isSourceOp(spec)) {
    const dtype = node.data.params.dtype;
    if (typeof dtype === 'string') return [dtype];
    const declared = spec.outputs[0]?.dtypes ?? [];
    if (declared.length > 0) return declared;
    const attr = spec.attrs.find((a) => a.name === 'dtype');
    return typeof attr?.default === 'string' ? [attr.default] : ['f32'];
  }
  const declared = spec.outputs[0]?.dtypes ?? [];
  if (declared.length > 0) return declared;
  const first = spec.inputs[0];
  if (!first) return ALL_DTYPES;
  const passThrough = first.dtypes.length > 1;
  if (passThrough && !seen.has(nodeId)) {
    seen.add(nodeId);
    const wire = canvas.edges.find((e) => e.target === nodeId && portOfHandle(e.targetHandle) === first.name);
    if (wire) return outputDtypes(canvas, table, wire.source, seen).filter((d) => first.dtypes.includes(d));
    return first.dtypes;
  }
  return first.dtypes;
}

function reaches(canvas: Canvas, from: string, to: string): boolean {
  const stack = [from];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (id === to) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const e of canvas.edges) if (e.source === id) stack.push(e.target);
  }
  return false;
}

const isOutput = (h: string | null) => h === OUT_HANDLE;
const isInput = (h: string | null) => portOfHandle(h) !== null;

export function checkWire(canvas: Canvas, table: OpTable, a: Attempt): WireCheck {
  // A drag may start at either end; normalise to output → input.
  let { source, sourceHandle, target, targetHandle } = a;
  if (isInput(sourceHandle) && isOutput(targetHandle)) {
    [source, target] = [target, source];
    [sourceHandle, targetHandle] = [targetHandle, sourceHandle];
  }
  if (!source || !target) return { ok: false, reason: 'a wire needs two ends' };
  if (isOutput(sourceHandle) && isOutput(targetHandle)) return { ok: false, reason: 'an output cannot feed an output' };
  if (isInput(sourceHandle) && isInput(targetHandle)) return { ok: false, reason: 'an input cannot feed an input' };
  const port = portOfHandle(targetHandle);
  if (!isOutput(sourceHandle) || !port) return { ok: false, reason: 'a wire goes from an output to an input' };
  if (source === target) return { ok: false, reason: 'a node cannot feed itself' };
  const from = nodeOf(canvas, source);
  const to = nodeOf(canvas, target);
  if (!from || !to) return { ok: false, reason: 'no such node' };
  const spec = table.byName.get(to.data.op);
  const portSpec = spec?.inputs.find((p) => p.name === port);
  if (spec && !portSpec) return { ok: false, reason: `${to.data.op} has no input "${port}"` };
  // A list port takes one more entry with each wire (the same source again too); any other port
  // takes one wire.
  const taken = canvas.edges.find((e) => e.target === target && portOfHandle(e.targetHandle) === port);
  if (taken && !portSpec?.list) return { ok: false, reason: `${target}.${port} already has a wire (from ${taken.source})` };
  if (reaches(canvas, target, source)) return { ok: false, reason: `the wire would close a cycle (${target} already feeds ${source})` };
  if (portSpec) {
    const have = outputDtypes(canvas, table, source);
    if (have.length > 0 && !have.some((d) => portSpec.dtypes.includes(d))) {
      return {
        ok: false,
        reason: `${source} gives ${have.join('|')}, but ${target}.${port} takes ${portSpec.dtypes.join('|')}`,
      };
    }
  }
  return { ok: true, source, target, port };
}
