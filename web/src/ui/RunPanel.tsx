import { useRef, useState } from 'react';
import { api, errorText, type RequestOptions, type StreamEvent } from '../api';
import { isObject, type JsonObject } from '../model/json';
import { stepFeeds } from '../model/feeds';
import { toDiag, type Diag } from '../model/pointer';
import { compareOutputs, thresholdsOf, toNumber, toTensors, type OutputComparison, type Thresholds } from '../model/tensors';
import { ScellisReferenceError, type Reference } from '@scellis/wasm-reference';
import { dropWasmReference, getWasmReference } from '../wasm_reference';
import { ComparisonView, LossCurve, ResultView, type LossPoint, type ResultInfo } from './Results';
import { describeAdapter } from '../model/tab_conform';
import type { Runtime } from '@scellis/runtime';

export interface RunPanelProps {
  document: () => JsonObject;
  options: RequestOptions;
  hasTrain: boolean;
  trainLossOutput: string | null;
  hasCarry: boolean;
  canRunServer: boolean;
  getRuntime: () => Promise<Runtime>;
  planThresholds: Thresholds | null;
  onRuntimeUnavailable: (reason: string) => void;
  onDiagnostics: (diags: Diag[]) => void;
}

interface ServerRun {
  result: ResultInfo | null;
  notes: Diag[];
  error: string | null;
}

const nextFrame = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Collects one POST /api/run stream into a result.
async function runOnServer(body: JsonObject, onStart?: (e: StreamEvent) => void, signal?: AbortSignal, onProgress?: (done: number, total: number) => void): Promise<ServerRun> {
  let start: StreamEvent | null = null;
  const notes: Diag[] = [];
  let result: ResultInfo | null = null;
  let error: string | null = null;
  await api.run(
    body,
    (e) => {
      if (e.event === 'start') {
        start = e;
        onStart?.(e);
      } else if (e.event === 'progress') {
        onProgress?.(Number(e.step), Number(e.total));
      } else if (e.event === 'note') {
        const d = toDiag(e);
        if (d) notes.push(d);
      } else if (e.event === 'result') {
        const report = isObject(e.report) ? e.report : e;
        const s = (start ?? {}) as StreamEvent;
        result = {
          title: 'server run',
          backend: String(report.backend ?? s.backend ?? '?'),
          executor: String(report.executor ?? s.executor ?? '?'),
          fallbackReason: (report.fallback_reason ?? s.fallback_reason ?? null) as string | null,
          outputs: toTensors(report.outputs),
          runId: typeof e.run_id === 'string' ? e.run_id : null,
        };
      } else if (e.event === 'error') {
        const err = isObject(e.error) ? e.error : {};
        error = `${String(err.code ?? 'error')}: ${String(err.message ?? '')}${err.help ? ` (help: ${String(err.help)})` : ''}`;
      }
    },
    signal,
  );
  return { result, notes, error };
}

// Runs the document on the CPU reference compiled to WebAssembly, in this tab: the whole run at
// once (steps included), the loss after every step when the document trains.
async function runOnWasmReference(doc: unknown, options: RequestOptions, steps: number, why: string, lossOutput: string | null): Promise<{ result: ResultInfo; loss: LossPoint[] }> {
  let reference: Reference;
  try {
    reference = await getWasmReference();
  } catch (err) {
    throw new Error(`nothing can run in this tab: ${why}, and the WebAssembly reference did not load (${errorText(err)}) — use “Run on server”`);
  }
  let r;
  try {
    r = reference.run(JSON.stringify(doc), { whyNoWebGPU: why, tier: options.tier, bind: options.bind, budget: options.budget, steps, history: lossOutput ? [lossOutput] : [] });
  } catch (err) {
    if (!(err instanceof ScellisReferenceError)) throw err;
    // After a trap the instance refuses every run: the next one loads a fresh module.
    if (err.code === 'wasm-reference-stopped') dropWasmReference();
    throw Object.assign(new Error(`${err.code}: ${err.message}`), { diagnostics: err.diagnostics.map(toDiag).filter((d): d is Diag => d !== null) });
  }
  const loss: LossPoint[] = [];
  const h = lossOutput ? r.history?.[lossOutput] : undefined;
  if (h) h.steps.forEach((v, i) => loss.push({ step: i + 1, loss: toNumber(Array.isArray(v) ? v[0] : v) }));
  return {
    result: { title: 'in this tab: the CPU reference in WebAssembly', backend: r.backend, executor: `${r.executor} (WebAssembly)`, fallbackReason: r.fallback_reason, outputs: toTensors(r.outputs), steps },
    loss,
  };
}

export function RunPanel(p: RunPanelProps) {
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [steps, setSteps] = useState<string>('');
  const [tab, setTab] = useState<ResultInfo | null>(null);
  const [reference, setReference] = useState<ResultInfo | null>(null);
  const [tabReceipts, setTabReceipts] = useState<string | null>(null);
  const [comparison, setComparison] = useState<{ rows: OutputComparison[]; thresholds: Thresholds; bits?: boolean } | null>(null);
  const [server, setServer] = useState<ServerRun | null>(null);
  const [loss, setLoss] = useState<LossPoint[]>([]);
  const [trainInfo, setTrainInfo] = useState<string | null>(null);
  const [trainResult, setTrainResult] = useState<ResultInfo | null>(null);
  const abort = useRef<AbortController | null>(null);

  const stepCount = () => {
    const n = Number(steps || (p.hasCarry ? 32 : 1));
    return Number.isInteger(n) && n >= 1 ? n : 1;
  };

  const guard = async (what: string, f: (signal: AbortSignal) => Promise<void>) => {
    abort.current?.abort();
    const ctl = new AbortController();
    abort.current = ctl;
    setBusy(true);
    setError(null);
    setStatus(what);
    try {
      await f(ctl.signal);
      setStatus(null);
    } catch (err) {
      if (!ctl.signal.aborted) {
        setError(errorText(err));
        const diags = (err as { diagnostics?: Diag[] }).diagnostics;
        if (diags && diags.length) p.onDiagnostics(diags);
      }
      setStatus(null);
    } finally {
      setBusy(false);
    }
  };

  const runInTab = () =>
    guard('compiling the device program…', async (signal) => {
      setTab(null);
      setReference(null);
      setComparison(null);
      setTabReceipts(null);
      const doc = p.document();
      const program = await api.program(doc, p.options);
      setStatus('starting the runtime…');
      const rt = await p.getRuntime();
      const n = stepCount();
      if (rt.backend !== 'webgpu') {
        // No usable WebGPU: the engine's CPU reference, compiled to WebAssembly, runs in the tab
        // behind the page's banner, and must give the native reference's bits.
        const why = rt.fallbackReason ?? 'no usable WebGPU adapter';
        p.onRuntimeUnavailable(why);
        setStatus(`running ${n} step${n > 1 ? 's' : ''} on the CPU reference in WebAssembly…`);
        const tab = await runOnWasmReference(doc, p.options, n, why, p.trainLossOutput ?? null);
        if (p.trainLossOutput) setLoss(tab.loss);
        setTab(tab.result);
        if (signal.aborted) return;
        setStatus('asking the server for the native CPU reference…');
        const ref = await runOnServer({ document: doc, ...p.options, backend: 'cpu', steps: n }, undefined, signal);
        if (ref.error || !ref.result) throw new Error(`the CPU reference failed: ${ref.error ?? 'no result'}`);
        const refInfo = { ...ref.result, title: 'CPU reference (server)' };
        setReference(refInfo);
        setComparison({ rows: compareOutputs(tab.result.outputs, refInfo.outputs, { atol: 0, rtol: 0 }, true), thresholds: { atol: 0, rtol: 0 }, bits: true });
        return;
      }
      let last: ResultInfo | null = null;
      if (p.hasCarry || n > 1) {
        const session = await rt.prepare(program, {});
        const points: LossPoint[] = [];
        setLoss([]);
        setTrainInfo(null);
        try {
          for (let i = 1; i <= n && !signal.aborted; ++i) {
            setStatus(`step ${i} of ${n} in the tab`);
            // One step with every output read back (runSteps returns only per-step histories).
            const r = await session.run(stepFeeds(program, i));
            last = { title: 'in this tab', backend: r.backend, executor: r.executor, fallbackReason: r.fallbackReason, outputs: toTensors(r.outputs), steps: i };
            setTab(last);
            const lossValue = p.trainLossOutput ? last.outputs[p.trainLossOutput] : undefined;
            if (lossValue && lossValue.data.length === 1) {
              points.push({ step: i, loss: lossValue.data[0] });
              setLoss([...points]);
            }
            await nextFrame(60);
          }
        } finally {
          session.dispose();
        }
      } else {
        const r = await rt.execute(program, stepFeeds(program, 1));
        last = { title: 'in this tab', backend: r.backend, executor: r.executor, fallbackReason: r.fallbackReason, outputs: toTensors(r.outputs) };
        setTab(last);
      }
      if (!last || signal.aborted) return;
      setStatus('asking the server for the CPU reference…');
      const ref = await runOnServer({ document: doc, ...p.options, backend: 'cpu', steps: n }, undefined, signal);
      if (ref.error || !ref.result) throw new Error(`the CPU reference failed: ${ref.error ?? 'no result'}`);
      const refInfo = { ...ref.result, title: 'CPU reference (server)' };
      setReference(refInfo);
      const th = thresholdsOf(program) ?? thresholdsOf(program.plan) ?? p.planThresholds ?? { atol: 0, rtol: 0 };
      setComparison({ rows: compareOutputs(last.outputs, refInfo.outputs, th), thresholds: th });
      // Trust is by receipt: which of these kernels this tab's device has conformed (Probe tab).
      const held = await api.receipts(doc, p.options, describeAdapter(rt.adapterInfo as Parameters<typeof describeAdapter>[0], rt.device?.limits));
      const missing = held.missing.length ? ` (missing: ${held.missing.join(', ')}; conform this tab from the Probe tab)` : '';
      setTabReceipts(`receipts: ${held.conformed}/${held.kernels} kernels conformed on this tab's device${missing}`);
    });

  const runServer = () =>
    guard('running on the server…', async (signal) => {
      setServer(null);
      const r = await runOnServer(
        { document: p.document(), ...p.options, steps: stepCount() },
        (e) => setStatus(`running on the server (${String(e.backend)})`),
        signal,
        (done, total) => setStatus(`running on the server: step ${done} of ${total}`),
      );
      setServer(r);
      if (r.error) throw new Error(r.error);
    });

  const train = () =>
    guard('training on the server…', async (signal) => {
      setLoss([]);
      setTrainResult(null);
      setTrainInfo(null);
      let count = 0;
      const points: LossPoint[] = [];
      let start: StreamEvent | null = null;
      let failure: string | null = null;
      const maxSteps = Number(steps) || 64;
      await api.train(
        { document: p.document(), max_steps: maxSteps },
        (e) => {
          if (e.event === 'start') {
            start = e;
            setTrainInfo(`backend ${String(e.backend)}, executor ${String(e.executor)}, fallback: ${String(e.fallback_reason ?? 'none')}`);
          } else if (e.event === 'progress' && typeof e.loss === 'number') {
            count += 1;
            const step = typeof e.global_step === 'number' ? e.global_step : count;
            points.push({ step, loss: e.loss });
            setLoss([...points]);
            setStatus(`epoch ${String(e.epoch ?? '?')} step ${String(e.step ?? count)} loss ${e.loss.toPrecision(5)}`);
          } else if (e.event === 'epoch') {
            setTrainInfo((t) => `${t ?? ''} · epoch ${String(e.epoch)}: ${Object.entries(e).filter(([k]) => k !== 'event' && k !== 'epoch').map(([k, v]) => `${k} ${typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : JSON.stringify(v)}`).join(', ')}`);
          } else if (e.event === 'result') {
            const report = isObject(e.report) ? e.report : e;
            const s = (start ?? {}) as StreamEvent;
            setTrainResult({
              title: 'training',
              backend: String(report.backend ?? s.backend ?? '?'),
              executor: String(report.executor ?? s.executor ?? '?'),
              fallbackReason: (report.fallback_reason ?? s.fallback_reason ?? null) as string | null,
              outputs: toTensors(report.outputs),
              runId: typeof e.run_id === 'string' ? e.run_id : null,
            });
          } else if (e.event === 'error') {
            const err = isObject(e.error) ? e.error : {};
            failure = `${String(err.code ?? 'error')}: ${String(err.message ?? '')}`;
          }
        },
        signal,
      );
      if (failure) throw new Error(failure);
    });

  return (
    <div className="run-panel" data-testid="run-panel">
      <div className="run-buttons">
        <button data-testid="run-tab" onClick={runInTab} disabled={busy}>
          Run in tab
        </button>
        <button data-testid="run-server" onClick={runServer} disabled={busy || !p.canRunServer}>
          Run on server
        </button>
        {p.hasTrain && (
          <button data-testid="train-server" onClick={train} disabled={busy || !p.canRunServer}>
            Train on server
          </button>
        )}
        <label>
          {p.hasTrain ? 'steps (train: max steps)' : 'steps'}{' '}
          <input data-testid="run-steps" size={4} value={steps} placeholder={p.hasCarry ? '32' : p.hasTrain ? '64' : '1'} onChange={(e) => setSteps(e.target.value.replace(/[^0-9]/g, ''))} />
        </label>
        {busy && (
          <button className="small" onClick={() => abort.current?.abort()}>
            stop
          </button>
        )}
        {status && <span className="status" data-testid="run-status">{status}</span>}
      </div>
      {error && (
        <div className="diag-error" data-testid="run-error">
          {error}
        </div>
      )}
      {tab && <ResultView r={tab} testid="result-tab" />}
      {tabReceipts && <div className="muted" data-testid="tab-receipts">{tabReceipts}</div>}
      {comparison && <ComparisonView rows={comparison.rows} thresholds={comparison.thresholds} bits={comparison.bits} reference={`the CPU reference (${reference ? `${reference.backend} / ${reference.executor}` : 'cpu'})`} />}
      {reference && <ResultView r={reference} testid="result-reference" />}
      {server?.notes.map((d, i) => (
        <div key={i} className={`diag diag-${d.severity}`}>
          <b>{d.code}</b> {d.message}
        </div>
      ))}
      {server?.result && <ResultView r={server.result} testid="result-server" />}
      {(loss.length > 0 || trainInfo) && (
        <div className="training">
          {trainInfo && <div className="muted" data-testid="train-info">{trainInfo}</div>}
          <LossCurve points={loss} />
        </div>
      )}
      {trainResult && <ResultView r={trainResult} testid="result-train" />}
    </div>
  );
}
