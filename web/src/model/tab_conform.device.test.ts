// Browser conformance end to end without a browser: the real Studio server (SCELLIS_BUILD/scellis
// studio, default ../build) hands out the cases, the browser runtime (web/runtime) runs them on
// Dawn's WebGPU in Node (SwiftShader where there is no GPU), and the server judges them against
// its CPU reference. A device that computes one element wrong gets no receipt.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conformOp, describeAdapter, type TabRunner, type Transport } from './tab_conform';
import { createRuntime, type Runtime } from '@scellis/runtime';

const repo = resolve(__dirname, '../../..');
const binary = join(resolve(repo, process.env.SCELLIS_BUILD ?? 'build'), 'scellis');
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
if (!process.env.VK_ICD_FILENAMES && existsSync(SWIFTSHADER)) process.env.VK_ICD_FILENAMES = SWIFTSHADER;

let server: ChildProcess;
let base = '';
let store = '';
let runtime: Runtime;

const transport: Transport = {
  async postJson<T>(path: string, body: unknown): Promise<T> {
    const r = await fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(`${r.status} ${JSON.stringify(j.error)}`);
    return j as T;
  },
  async putBytes(path: string, bytes: Uint8Array) {
    const r = await fetch(base + path, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' }, body: bytes.slice() });
    if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  },
};

beforeAll(async () => {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: build the engine first (make build), or set SCELLIS_BUILD`);
  store = mkdtempSync(join(tmpdir(), 'scellis-tab-conform-'));
  server = spawn(binary, ['studio', '--port', '0', '--store', store, '--backend', 'cpu'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise<string>((res, rej) => {
    server.on('exit', (code) => rej(new Error(`scellis studio exited with ${code}`)));
    server.stdout!.on('data', (d) => {
      const m = /127\.0\.0\.1:(\d+)/.exec(String(d));
      if (m) res(m[1]!);
    });
  });
  base = `http://127.0.0.1:${port}`;
  const require = createRequire(join(repo, 'web/runtime/package.json'));
  const webgpu = require('webgpu') as { create: (flags: string[]) => unknown; globals: object };
  Object.assign(globalThis, webgpu.globals);
  runtime = await createRuntime({ gpu: webgpu.create([]), allowSoftwareAdapter: true });
  if (runtime.backend !== 'webgpu') throw new Error(`no WebGPU adapter: ${runtime.fallbackReason}`);
}, 60_000);

afterAll(() => {
  runtime?.destroy?.();
  server?.kill('SIGTERM');
  if (store) rmSync(store, { recursive: true, force: true });
});

const adapter = () => describeAdapter(runtime.adapterInfo as Parameters<typeof describeAdapter>[0], runtime.device!.limits);

describe('conformance of a WebGPU device through the Studio server', () => {
  it('relu (prod) and add (debug, two runs each) pass and mint receipts for the device profile', async () => {
    for (const [op, tier] of [['relu', 'prod'], ['add', 'debug']] as const) {
      const report = (await conformOp(op, tier, adapter(), runtime, transport)) as { ok: boolean; profile: string; ops: Array<{ passed: boolean; receipt: string | null; cases: number }> };
      expect(report.ok, JSON.stringify(report).slice(0, 500)).toBe(true);
      expect(report.profile).toMatch(/^webgpu;browser;vendor=/);
      expect(report.ops[0]!.passed).toBe(true);
      expect(report.ops[0]!.cases).toBeGreaterThan(3);
      expect(report.ops[0]!.receipt).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
    // A document's relu kernel now holds its receipt on this device; its mul kernel does not.
    const doc = { version: 1, nodes: [{ id: 0, op: 'input', shape: [3], data: [-2, 3, 4] }, { id: 1, op: 'relu', a: 0 }, { id: 2, op: 'mul', a: 1, b: 1 }], outputs: [{ name: 'y', id: 1 }, { name: 'z', id: 2 }] };
    const held = await transport.postJson<{ kernels: number; conformed: number; missing: string[] }>('/api/receipts', { document: doc, tier: 'prod', adapter: adapter() });
    expect(held.missing).toEqual(['mul']);
    expect(held.conformed).toBe(held.kernels - 1);
  }, 120_000);

  it('one wrong element in one case: the op fails, no receipt, the case is named', async () => {
    let tampered = false;
    const lying: TabRunner = {
      async execute(program, feeds, options) {
        const r = await runtime.execute(program, feeds, options);
        const out = Object.values(r.outputs)[0]!.data as Float32Array;
        if (!tampered && out.length > 0) {
          out[out.length - 1] = out[out.length - 1]! + 0.5;
          tampered = true;
        }
        return r;
      },
    };
    const report = (await conformOp('neg', 'prod', adapter(), lying, transport)) as { ok: boolean; ops: Array<{ passed: boolean; receipt: string | null; failures: Array<{ case: string; message: string }> }> };
    expect(tampered).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.ops[0]!.receipt).toBeNull();
    expect(report.ops[0]!.failures[0]!.case).toMatch(/^neg\//);
    expect(report.ops[0]!.failures[0]!.message).toMatch(/outside tolerance/);
  }, 120_000);
});
