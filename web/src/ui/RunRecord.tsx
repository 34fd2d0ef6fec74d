import { useEffect, useState } from 'react';
import { api, errorText } from '../api';
import { isObject, type JsonObject } from '../model/json';
import { compareOutputs, thresholdsOf, toTensors, type OutputComparison, type Thresholds } from '../model/tensors';
import { ComparisonView, ResultView, type ResultInfo } from './Results';

// /r/<run-id>: the stored record of a run (tier, backend, executor, receipts, outputs), its
// document one click away, and a replay: the stored document run again on the server with the
// record's tier and backend, its outputs compared with the recorded ones.
export function RunRecord({ id }: { id: string }) {
  const [record, setRecord] = useState<JsonObject | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [replay, setReplay] = useState<{ result: ResultInfo; rows: OutputComparison[]; th: Thresholds } | null>(null);
  const [replayState, setReplayState] = useState<string | null>(null);
  useEffect(() => {
    api.getRun(id).then(setRecord, (e) => setError(errorText(e)));
  }, [id]);
  if (error) return <div className="diag-error page" data-testid="run-record-error">{error}</div>;
  if (!record) return <div className="muted page">loading the run record…</div>;
  const docId = String(record.document_id ?? record.content_id ?? '');
  const scalars = Object.entries(record).filter(([k, v]) => k !== 'outputs' && k !== 'receipts' && !isObject(v) && !Array.isArray(v));
  const recorded = toTensors(record.outputs);

  const doReplay = async () => {
    setReplayState('fetching the document…');
    setReplay(null);
    try {
      const d = await api.getDocument(docId);
      setReplayState('running on the server…');
      let result: ResultInfo | null = null;
      let failure: string | null = null;
      const body: JsonObject = { document: d.document as JsonObject };
      if (typeof record.tier === 'string') body.tier = record.tier;
      if (record.backend === 'cpu' || record.backend === 'webgpu') body.backend = record.backend;
      if (typeof record.steps === 'number') body.steps = record.steps;
      await api.run(body, (e) => {
        if (e.event === 'result') {
          const r = isObject(e.report) ? e.report : e;
          result = { title: 'replay', backend: String(r.backend), executor: String(r.executor), fallbackReason: (r.fallback_reason ?? null) as string | null, outputs: toTensors(r.outputs), runId: typeof e.run_id === 'string' ? e.run_id : null };
        } else if (e.event === 'error' && isObject(e.error)) failure = `${String(e.error.code)}: ${String(e.error.message)}`;
      });
      if (failure || !result) throw new Error(failure ?? 'no result');
      const r: ResultInfo = result;
      // The CPU reference replays bit for bit; elsewhere the tier's thresholds apply.
      const th = r.backend === 'cpu' && record.backend === 'cpu' ? { atol: 0, rtol: 0 } : (thresholdsOf(record) ?? { atol: 0, rtol: 0 });
      setReplay({ result: r, rows: compareOutputs(r.outputs, recorded, th), th });
      setReplayState(null);
    } catch (err) {
      setReplayState(`replay failed: ${errorText(err)}`);
    }
  };

  return (
    <div className="page run-record" data-testid="run-record">
      <h2>Run {id.slice(0, 19)}…</h2>
      <table className="kv">
        <tbody>
          {scalars.map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td data-testid={`record-${k}`}>{v === null ? 'none' : String(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {docId && (
        <p>
          <a href={`/w/${docId}`} data-testid="record-open-document">
            open its document
          </a>{' '}
          <button data-testid="record-replay" onClick={doReplay}>
            Replay on the server
          </button>{' '}
          {replayState && <span className="muted" data-testid="record-replay-status">{replayState}</span>}
        </p>
      )}
      {replay && <ComparisonView rows={replay.rows} thresholds={replay.th} reference="the recorded outputs" />}
      {replay && <ResultView r={replay.result} testid="record-replay-result" />}
      <ResultView
        testid="record-result"
        r={{
          title: 'recorded outputs',
          backend: String(record.backend ?? '?'),
          executor: String(record.executor ?? '?'),
          fallbackReason: (record.fallback_reason ?? null) as string | null,
          outputs: recorded,
        }}
      />
      {record.receipts !== undefined && (
        <details open>
          <summary>receipts</summary>
          <pre className="code" data-testid="record-receipts">{JSON.stringify(record.receipts, null, 2)}</pre>
        </details>
      )}
    </div>
  );
}
