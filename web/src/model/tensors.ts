// Tensors as results carry them (the server's JSON: flat numbers with "NaN"/"Infinity" strings;
// the runtime: typed arrays), and the comparison of an in-tab result with the CPU reference.
import { isObject } from './json';

export interface Tensor {
  shape: number[];
  dtype: string;
  data: ArrayLike<number>;
}

export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity' || v === 'inf') return Infinity;
  if (v === '-Infinity' || v === '-inf') return -Infinity;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return NaN;
}

export function toTensor(v: unknown): Tensor | null {
  if (!isObject(v) && !(typeof v === 'object' && v !== null)) return null;
  const o = v as Record<string, unknown>;
  const shape = Array.isArray(o.shape) ? o.shape.map(Number) : [];
  const raw = o.data ?? o.values;
  let data: ArrayLike<number>;
  if (ArrayBuffer.isView(raw) && !(raw instanceof DataView)) data = raw as unknown as ArrayLike<number>;
  else if (Array.isArray(raw)) data = raw.flat(Infinity as 1).map(toNumber);
  else return null;
  return { shape, dtype: typeof o.dtype === 'string' ? o.dtype : 'f32', data };
}

export function toTensors(outputs: unknown): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  if (typeof outputs !== 'object' || outputs === null) return out;
  for (const [name, v] of Object.entries(outputs as Record<string, unknown>)) {
    const t = toTensor(v);
    if (t) out[name] = t;
  }
  return out;
}

export interface Thresholds {
  atol: number;
  rtol: number;
}

// The tier's thresholds from a device program or a plan: {"atol","rtol"} under "tolerance",
// "thresholds" or "tolerance_thresholds".
export function thresholdsOf(v: unknown): Thresholds | null {
  if (!isObject(v)) return null;
  for (const key of ['thresholds', 'tolerance', 'tolerance_thresholds']) {
    const t = v[key];
    if (isObject(t) && typeof t.atol === 'number' && typeof t.rtol === 'number') return { atol: t.atol, rtol: t.rtol };
  }
  if (typeof v.atol === 'number' && typeof v.rtol === 'number') return { atol: v.atol, rtol: v.rtol };
  return null;
}

export interface OutputComparison {
  name: string;
  ok: boolean;
  elements: number;
  mismatches: number;
  maxAbsError: number;
  // Largest |a - b| / (atol + rtol * |b|): at most 1 passes.
  worstRatio: number;
  firstMismatch: { index: number; got: number; want: number } | null;
  problem?: string;
}

// |got - want| <= atol + rtol * |want|, elementwise, as the engine's tolerance classes are
// defined; NaN matches NaN and an infinity matches the same infinity (PyTorch's equal_nan).
export function compareTensors(name: string, got: Tensor | undefined, want: Tensor | undefined, th: Thresholds, bits = false): OutputComparison {
  const base = { name, elements: 0, mismatches: 0, maxAbsError: 0, worstRatio: 0, firstMismatch: null };
  if (!got || !want) return { ...base, ok: false, problem: got ? 'missing from the reference' : 'missing from the run' };
  if (got.shape.join('x') !== want.shape.join('x'))
    return { ...base, ok: false, problem: `shape [${got.shape}] vs reference [${want.shape}]` };
  if (got.data.length !== want.data.length)
    return { ...base, ok: false, problem: `${got.data.length} values vs reference ${want.data.length}` };
  const r: OutputComparison = { ...base, ok: true, elements: got.data.length };
  for (let i = 0; i < got.data.length; ++i) {
    const a = got.data[i];
    const b = want.data[i];
    let bad: boolean;
    let ratio = 0;
    if (Number.isNaN(a) || Number.isNaN(b)) bad = !(Number.isNaN(a) && Number.isNaN(b));
    else if (!Number.isFinite(a) || !Number.isFinite(b)) bad = a !== b;
    else if (bits) {
      bad = !Object.is(Math.fround(a), Math.fround(b));
      r.maxAbsError = Math.max(r.maxAbsError, Math.abs(a - b));
    } else {
      const err = Math.abs(a - b);
      const allowed = th.atol + th.rtol * Math.abs(b);
      r.maxAbsError = Math.max(r.maxAbsError, err);
      ratio = allowed > 0 ? err / allowed : err > 0 ? Infinity : 0;
      bad = err > allowed;
    }
    if (bad) {
      ratio = Math.max(ratio, Infinity);
      r.mismatches += 1;
      if (!r.firstMismatch) r.firstMismatch = { index: i, got: a, want: b };
    }
    r.worstRatio = Math.max(r.worstRatio, ratio);
  }
  r.ok = r.mismatches === 0;
  return r;
}

// With `bits`, values must be the same f32 (-0 is not +0): the WebAssembly reference's promise.
export function compareOutputs(got: Record<string, Tensor>, want: Record<string, Tensor>, th: Thresholds, bits = false): OutputComparison[] {
  const names = [...new Set([...Object.keys(want), ...Object.keys(got)])];
  return names.map((n) => compareTensors(n, got[n], want[n], th, bits));
}

// A 2-D view of a tensor for a heatmap: the last two axes; a leading batch is flattened into rows.
export function as2d(t: Tensor): { rows: number; cols: number } | null {
  if (t.shape.length < 2) return null;
  const cols = t.shape[t.shape.length - 1];
  const rows = t.data.length / Math.max(cols, 1);
  return rows >= 1 && cols >= 1 && Number.isInteger(rows) ? { rows, cols } : null;
}
