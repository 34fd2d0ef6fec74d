// Conformance of this tab's WebGPU device (docs/studio_api.md, "Conformance of the browser tab"):
// the server hands out an op's cases as device programs with their feeds, the tab runs each with
// its outputs poisoned first (twice in the debug tier) and sends the output bytes back in chunks,
// and the server judges them against the engine's CPU reference and mints the receipt for this
// tab's device profile. The tab computes; it never judges itself.

export interface TabAdapter {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  software: boolean;
  limits: Record<string, number>;
}

interface CaseOut {
  id: string;
  error: string | null;
  program?: unknown;
  feeds?: Record<string, { dtype: string; shape: number[]; data: string }>;
  output?: { name: string; bytes: number };
}
interface Job {
  job: string;
  runs: number;
  profile: string;
  cases: CaseOut[];
}

export interface TabRunner {
  execute(program: unknown, feeds: Record<string, unknown>, options: { poisonOutputs: boolean }): Promise<{ outputs: Record<string, { data: ArrayLike<number> }> }>;
}

export interface Transport {
  postJson<T>(path: string, body: unknown): Promise<T>;
  putBytes(path: string, bytes: Uint8Array): Promise<void>;
}

export interface TabConformProgress {
  op: string;
  done: number; // runs finished
  total: number;
}

// Chunks stay well inside the server's default request cap (16 MiB).
export const ANSWER_CHUNK_BYTES = 8 << 20;

const LIMIT_NAMES = ['maxStorageBufferBindingSize', 'maxBufferSize', 'minStorageBufferOffsetAlignment', 'maxComputeWorkgroupsPerDimension'];

// What the server needs to know of the device: its identity and the limits the runtime's device
// was created with (the programs are laid out for them).
export function describeAdapter(info: { vendor?: string; architecture?: string; device?: string; description?: string; isSoftware?: boolean } | null, limits: Record<string, unknown> | null | undefined): TabAdapter {
  const picked: Record<string, number> = {};
  for (const name of LIMIT_NAMES) {
    const v = limits?.[name];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) picked[name] = v;
  }
  return {
    vendor: info?.vendor ?? '',
    architecture: info?.architecture ?? '',
    device: info?.device ?? '',
    description: info?.description ?? '',
    software: Boolean(info?.isSoftware),
    limits: picked,
  };
}

export function decodeBase64(text: string): Uint8Array {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function feedArray(dtype: string, bytes: Uint8Array): Float32Array | Int32Array | Uint32Array {
  const copy = bytes.slice().buffer;
  if (dtype === 'i32') return new Int32Array(copy);
  if (dtype === 'u32' || dtype === 'bool') return new Uint32Array(copy);
  return new Float32Array(copy);
}

// The bytes of an output as the device wrote them (a typed array's own buffer, so NaN payloads
// such as the poison sentinel survive).
function outputBytes(data: ArrayLike<number>): Uint8Array {
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(Float32Array.from(data).buffer);
}

// Conforms one op on this tab; returns the server's report ({ok, profile, ops: [{op, passed,
// receipt, failures, ...}]}).
export async function conformOp(op: string, tier: string, adapter: TabAdapter, runner: TabRunner, transport: Transport, onProgress: (p: TabConformProgress) => void = () => {}): Promise<Record<string, unknown>> {
  const job = await transport.postJson<Job>('/api/conform/browser', { tier, op, adapter });
  const base = `/api/conform/browser/${encodeURIComponent(job.job)}`;
  const runnable = job.cases.filter((c) => c.program && c.output);
  const total = runnable.length * job.runs;
  let done = 0;
  onProgress({ op, done, total });
  for (const [index, c] of job.cases.entries()) {
    if (!c.program || !c.output) continue;
    const feeds: Record<string, unknown> = {};
    for (const [name, f] of Object.entries(c.feeds ?? {})) feeds[name] = { shape: f.shape, data: feedArray(f.dtype, decodeBase64(f.data)) };
    for (let run = 0; run < job.runs; run++) {
      let bytes: Uint8Array;
      try {
        const r = await runner.execute(c.program, feeds, { poisonOutputs: true });
        const out = r.outputs[c.output.name];
        if (!out) throw new Error(`the run gave no output "${c.output.name}"`);
        bytes = outputBytes(out.data);
      } catch (err) {
        await transport.postJson(`${base}/${index}/failed`, { error: err instanceof Error ? err.message : String(err) });
        done += job.runs - run;
        onProgress({ op, done, total });
        break;
      }
      for (let offset = 0; offset < bytes.byteLength; offset += ANSWER_CHUNK_BYTES) {
        await transport.putBytes(`${base}/${index}/${run}/${offset}`, bytes.subarray(offset, Math.min(bytes.byteLength, offset + ANSWER_CHUNK_BYTES)));
      }
      done++;
      onProgress({ op, done, total });
    }
  }
  return transport.postJson<Record<string, unknown>>(`${base}/judge`, {});
}
