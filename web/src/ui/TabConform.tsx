import { useState } from 'react';
import { ApiError, errorText, postJson } from '../api';
import { conformOp, describeAdapter, type TabConformProgress, type Transport } from '../model/tab_conform';
import type { OpTable } from '../model/optable';
import type { Runtime } from '@scellis/runtime';

const transport: Transport = {
  postJson: (path, body) => postJson(path, body),
  async putBytes(path, bytes) {
    const res = await fetch(path, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' }, body: bytes.slice() as Uint8Array<ArrayBuffer> });
    if (!res.ok) {
      let message = `${res.status} ${res.statusText}`;
      try {
        const j = await res.json();
        if (j?.error?.message) message = `${j.error.code}: ${j.error.message}`;
      } catch {
        // not JSON
      }
      throw new ApiError(res.status, `http-${res.status}`, message, null, null, []);
    }
  },
};

interface Row {
  op: string;
  passed: boolean;
  cases: number;
  maxAbs: unknown;
  receipt: string | null;
  failure: string | null;
}

// The groups conformance knows: every op that computes (not a source or a dataset block), and the
// fused elementwise chains.
export function conformGroups(table: OpTable): string[] {
  return [...table.list.filter((s) => !s.nodeType && s.inputs.length > 0).map((s) => s.name), 'fused'];
}

// Conformance of this tab's device: receipts for the browser's own profile, minted by the server
// after it judged what the tab computed.
export function TabConformPanel({ table, getRuntime, usable }: { table: OpTable; getRuntime: () => Promise<Runtime>; usable: boolean }) {
  const groups = conformGroups(table);
  const [tier, setTier] = useState('prod');
  const [op, setOp] = useState('all');
  const [busy, setBusy] = useState(false);
  const [progress, setProgress] = useState<TabConformProgress | null>(null);
  const [rows, setRows] = useState<Row[]>([]);
  const [profile, setProfile] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const start = async () => {
    setBusy(true);
    setRows([]);
    setError(null);
    try {
      const rt = await getRuntime();
      if (rt.backend !== 'webgpu') throw new Error(`no WebGPU in this tab: ${rt.fallbackReason ?? 'no adapter'}`);
      const device = (rt as unknown as { device?: { limits?: Record<string, unknown> } }).device;
      const adapter = describeAdapter(rt.adapterInfo as Parameters<typeof describeAdapter>[0], device?.limits as Record<string, unknown> | undefined);
      for (const g of op === 'all' ? groups : [op]) {
        const report = await conformOp(g, tier, adapter, { execute: (p, f, o) => rt.execute(p, f, o) }, transport, setProgress);
        setProfile(String(report.profile ?? ''));
        const r = (Array.isArray(report.ops) ? report.ops[0] : null) as Record<string, unknown> | null;
        const failures = Array.isArray(r?.failures) ? (r!.failures as Array<{ case: string; message: string }>) : [];
        setRows((rows) => [...rows, {
          op: g,
          passed: Boolean(r?.passed),
          cases: Number(r?.cases ?? 0),
          maxAbs: r?.max_abs_error ?? null,
          receipt: typeof r?.receipt === 'string' ? r.receipt : null,
          failure: failures.length ? `${failures[0]!.case}: ${failures[0]!.message}` : null,
        }]);
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      setProgress(null);
    }
  };

  return (
    <section data-testid="tab-conform">
      <h4>Conformance of this tab</h4>
      <div className="muted">Every kernel of an op runs here on fresh data; the server judges the outputs against its CPU reference and keeps a receipt for this browser's device.</div>
      <label>tier <select value={tier} onChange={(e) => setTier(e.target.value)} data-testid="tab-conform-tier">
        <option value="prod">prod</option>
        <option value="debug">debug</option>
      </select></label>{' '}
      <label>op <select value={op} onChange={(e) => setOp(e.target.value)} data-testid="tab-conform-op">
        <option value="all">every op</option>
        {groups.map((g) => <option key={g} value={g}>{g}</option>)}
      </select></label>{' '}
      <button disabled={busy || !usable} onClick={start} data-testid="tab-conform-start">{busy ? 'conforming…' : 'conform this tab'}</button>
      {!usable && <div className="muted">needs WebGPU in this tab</div>}
      {progress && <div data-testid="tab-conform-progress">{progress.op}: {progress.done}/{progress.total} runs</div>}
      {error && <div className="diag-error" data-testid="tab-conform-error">{error}</div>}
      {profile && <div className="muted" data-testid="tab-conform-profile">profile: {profile}</div>}
      {rows.length > 0 && (
        <table className="kv conform-results" data-testid="tab-conform-results">
          <tbody>
            {rows.map((r) => (
              <tr key={r.op} data-testid={`tab-conform-row-${r.op}`} className={r.passed ? 'ok' : 'diag-error'}>
                <th>{r.op}</th>
                <td>{r.passed ? 'passed' : 'FAILED'}</td>
                <td>{r.cases} cases</td>
                <td>max |err| {String(r.maxAbs)}</td>
                <td>{r.receipt ? `receipt ${r.receipt.slice(0, 19)}…` : r.failure ?? 'no receipt'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
