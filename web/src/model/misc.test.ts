import { describe, expect, it } from 'vitest';
import { NdjsonSplitter } from './ndjson';
import { parseRoute } from './route';
import { as2d, compareOutputs, compareTensors, thresholdsOf, toTensor, toTensors } from './tensors';
import { splitWgslDump, tokenize, wgslSources } from './wgsl';

const ID = 'sha256:' + 'ab'.repeat(32);

describe('routes', () => {
  it('reads the three addresses and refuses bad ids', () => {
    expect(parseRoute('/')).toEqual({ kind: 'home' });
    expect(parseRoute(`/w/${ID}`)).toEqual({ kind: 'document', id: ID });
    expect(parseRoute(`/r/${encodeURIComponent(ID)}/`)).toEqual({ kind: 'run', id: ID });
    expect(parseRoute('/w/sha256:xyz').kind).toBe('bad');
    expect(parseRoute('/w/..%2f..%2fetc%2fpasswd').kind).toBe('bad');
    expect(parseRoute('/elsewhere').kind).toBe('bad');
  });
});

describe('ndjson', () => {
  it('parses whole lines across arbitrary chunks, multi-byte characters included', () => {
    const s = new NdjsonSplitter();
    const bytes = new TextEncoder().encode('{"event":"start","backend":"cpu"}\n{"event":"note","message":"µ"}\n{"event":"re');
    const events = [...s.push(bytes.slice(0, 10)), ...s.push(bytes.slice(10, 45)), ...s.push(bytes.slice(45))];
    expect(events).toEqual([{ event: 'start', backend: 'cpu' }, { event: 'note', message: 'µ' }]);
    expect(s.push('sult"}')).toEqual([]);
    expect(s.end()).toEqual([{ event: 'result' }]);
  });

  it('turns a broken line into an error event', () => {
    const s = new NdjsonSplitter();
    expect(s.push('oops\n')).toMatchObject([{ event: 'error', error: { code: 'bad-stream' } }]);
  });
});

describe('tensors and comparison', () => {
  const th = { atol: 1e-5, rtol: 1e-4 };

  it('reads the server form with non-finite strings and the runtime form with typed arrays', () => {
    expect(toTensor({ shape: [3], dtype: 'f32', data: [1, 'NaN', '-Infinity'] })?.data).toEqual([1, NaN, -Infinity]);
    expect(toTensor({ shape: [2], dtype: 'f32', data: new Float32Array([1, 2]) })?.data).toEqual(new Float32Array([1, 2]));
    expect(Object.keys(toTensors({ a: { shape: [], data: [1] }, b: 3 }))).toEqual(['a']);
  });

  it('passes within atol + rtol·|want| and reports the worst element', () => {
    const want = { shape: [3], dtype: 'f32', data: [0, 100, 'NaN'].map(Number) };
    const ok = compareTensors('y', { ...want, data: [5e-6, 100.005, NaN] }, want, th);
    expect(ok.ok).toBe(true);
    expect(ok.worstRatio).toBeCloseTo(0.5, 9); // element 0: 5e-6 against atol 1e-5
    const bad = compareTensors('y', { ...want, data: [0, 100.02, 1] }, want, th);
    expect(bad).toMatchObject({ ok: false, mismatches: 2, firstMismatch: { index: 1, got: 100.02, want: 100 } });
  });

  it('names missing outputs and shape differences', () => {
    const t = { shape: [2], dtype: 'f32', data: [1, 2] };
    const r = compareOutputs({ a: t }, { a: { ...t, shape: [1, 2] }, b: t }, th);
    expect(r.map((x) => x.problem)).toEqual(['shape [2] vs reference [1,2]', 'missing from the run']);
  });

  it('finds thresholds under any of their names', () => {
    expect(thresholdsOf({ tolerance: { class: 'default', atol: 1e-5, rtol: 1e-4 } })).toEqual(th);
    expect(thresholdsOf({ thresholds: { atol: 0, rtol: 0 } })).toEqual({ atol: 0, rtol: 0 });
    expect(thresholdsOf({})).toBeNull();
  });

  it('views the last two axes as a matrix', () => {
    expect(as2d({ shape: [2, 4, 3], dtype: 'f32', data: new Array(24).fill(0) })).toEqual({ rows: 8, cols: 3 });
    expect(as2d({ shape: [3], dtype: 'f32', data: [1, 2, 3] })).toBeNull();
  });
});

describe('wgsl highlighter', () => {
  const src = '// ---- k0 ----\n@group(0) @binding(0) var<storage, read> in0: array<f32>;\nfn main() { let i = 3u + 0.5; out[i] = max(a, 1e-3); }\n';

  it('loses no byte', () => {
    expect(tokenize(src).map((t) => t.text).join('')).toBe(src);
  });

  it('classifies comments, attributes, keywords, types, builtins and numbers', () => {
    const kinds = new Map(tokenize(src).map((t) => [t.text, t.kind]));
    expect(kinds.get('// ---- k0 ----')).toBe('comment');
    expect(kinds.get('@binding')).toBe('attribute');
    expect(kinds.get('var')).toBe('keyword');
    expect(kinds.get('f32')).toBe('type');
    expect(kinds.get('max')).toBe('builtin');
    expect(kinds.get('3u')).toBe('number');
    expect(kinds.get('1e-3')).toBe('number');
    expect(kinds.get('in0')).toBe('ident');
  });

  it('splits the engine WGSL dump by kernel', () => {
    const m = splitWgslDump('// ---- k0_mean ----\nA\n\n// ---- k1 ----\nB\n');
    expect([...m.entries()]).toEqual([['k0_mean', 'A\n'], ['k1', 'B\n']]);
  });

  it('finds each kernel\'s WGSL in the kernel rung as the server sends it, else in the program', () => {
    // POST /api/rungs: rungs.kernel = {text, json: {kernels: [{name, ...}]}, wgsl: [{kernel, entry_point, source}]}
    const rung = {
      text: 'kernels',
      json: { kernels: [{ name: 'k0_mean' }, { name: 'k1_fused_sub' }, { name: 'k2_matmul' }] },
      wgsl: [
        { kernel: 'k0_mean', entry_point: 'main', source: 'MEAN' },
        { kernel: 'k1_fused_sub', entry_point: 'main', source: 'SUB' },
      ],
    };
    const program = { pipelines: [{ id: 0, kernel: 'k0_mean', wgsl: 'OTHER' }, { id: 2, kernel: 'k2_matmul', wgsl: 'MATMUL' }] };
    expect([...wgslSources(rung, program).entries()]).toEqual([['k0_mean', 'MEAN'], ['k1_fused_sub', 'SUB'], ['k2_matmul', 'MATMUL']]);
    expect([...wgslSources(rung, null).keys()]).toEqual(['k0_mean', 'k1_fused_sub']);
    expect([...wgslSources({ ...rung, wgsl: '// ---- k2_matmul ----\nM\n' }, null).entries()]).toEqual([['k2_matmul', 'M\n']]);
    expect(wgslSources(null, null).size).toBe(0);
  });
});
