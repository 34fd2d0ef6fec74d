import { describe, expect, it } from 'vitest';
import { ANSWER_CHUNK_BYTES, conformOp, decodeBase64, describeAdapter, type Transport } from './tab_conform';

const b64 = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString('base64');

function recordingTransport(job: unknown) {
  const calls: Array<{ kind: string; path: string; body?: unknown; bytes?: number[] }> = [];
  const t: Transport = {
    async postJson<T>(path: string, body: unknown) {
      calls.push({ kind: 'post', path, body });
      if (path === '/api/conform/browser') return job as T;
      return { ok: true, path } as T;
    },
    async putBytes(path: string, bytes: Uint8Array) {
      calls.push({ kind: 'put', path, bytes: Array.from(new Float32Array(bytes.slice().buffer)) });
    },
  };
  return { t, calls };
}

describe('tab conformance', () => {
  it('describes the adapter with the limits the programs are laid out for, and nothing else', () => {
    const a = describeAdapter({ vendor: 'google', architecture: 'swiftshader', device: '', description: 'SwiftShader', isSoftware: true }, { maxStorageBufferBindingSize: 134217728, maxBufferSize: 268435456, maxTextureDimension2D: 8192, minStorageBufferOffsetAlignment: 1.5 });
    expect(a).toEqual({ vendor: 'google', architecture: 'swiftshader', device: '', description: 'SwiftShader', software: true, limits: { maxStorageBufferBindingSize: 134217728, maxBufferSize: 268435456 } });
  });

  it('decodes base64 as RFC 4648 says', () => {
    expect(Array.from(decodeBase64('AAECA/8='))).toEqual([0, 1, 2, 3, 255]);
  });

  it('runs every case (twice in debug), poisoned, sends each output in order, reports a failed run, then asks for the judgement', async () => {
    const job = {
      job: 'j1', runs: 2, profile: 'webgpu;browser;x',
      cases: [
        { id: 'relu/a', error: null, program: { p: 0 }, feeds: { x: { dtype: 'f32', shape: [3], data: b64([-1, 2, -3]) } }, output: { name: 'out', bytes: 12 } },
        { id: 'relu/b', error: 'does not compile: no' },
        { id: 'relu/c', error: null, program: { p: 2 }, feeds: { x: { dtype: 'f32', shape: [1], data: b64([5]) } }, output: { name: 'out', bytes: 4 } },
      ],
    };
    const { t, calls } = recordingTransport(job);
    const seen: unknown[] = [];
    const runner = {
      async execute(program: unknown, feeds: Record<string, unknown>, options: { poisonOutputs: boolean }) {
        seen.push({ program, options });
        if ((program as { p: number }).p === 2) throw new Error('device lost');
        const x = (feeds.x as { data: Float32Array }).data;
        return { outputs: { out: { data: x.map((v) => Math.max(v, 0)) } } };
      },
    };
    const progress: number[] = [];
    const report = await conformOp('relu', 'debug', describeAdapter(null, null), runner, t, (p) => progress.push(p.done));
    expect(report).toEqual({ ok: true, path: '/api/conform/browser/j1/judge' });
    expect(seen).toEqual([
      { program: { p: 0 }, options: { poisonOutputs: true } },
      { program: { p: 0 }, options: { poisonOutputs: true } },
      { program: { p: 2 }, options: { poisonOutputs: true } },
    ]);
    expect(calls.map((c) => `${c.kind} ${c.path}`)).toEqual([
      'post /api/conform/browser',
      'put /api/conform/browser/j1/0/0/0',
      'put /api/conform/browser/j1/0/1/0',
      'post /api/conform/browser/j1/2/failed',
      'post /api/conform/browser/j1/judge',
    ]);
    expect(calls[1]!.bytes).toEqual([0, 2, 0]);
    expect(calls[3]!.body).toEqual({ error: 'device lost' });
    expect(progress).toEqual([0, 1, 2, 4]);
  });

  it('splits a large output into chunks at increasing offsets', async () => {
    const n = ANSWER_CHUNK_BYTES / 4 + 3;
    const job = { job: 'j2', runs: 1, profile: 'p', cases: [{ id: 'neg/big', error: null, program: {}, feeds: {}, output: { name: 'out', bytes: n * 4 } }] };
    const { t, calls } = recordingTransport(job);
    const runner = { async execute() { return { outputs: { out: { data: new Float32Array(n).fill(1) } } }; } };
    await conformOp('neg', 'prod', describeAdapter(null, null), runner, t);
    const puts = calls.filter((c) => c.kind === 'put');
    expect(puts.map((c) => c.path)).toEqual(['/api/conform/browser/j2/0/0/0', `/api/conform/browser/j2/0/0/${ANSWER_CHUNK_BYTES}`]);
    expect(puts[0]!.bytes!.length + puts[1]!.bytes!.length).toBe(n);
  });
});
