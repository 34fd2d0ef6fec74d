import { useEffect, useState } from 'react';
import { api, errorText } from '../api';
import { isObject, type JsonObject } from '../model/json';
import { readReplayVerdict, recordScalars, type ReplayVerdict } from '../model/replay';
import { toTensors } from '../model/tensors';
import { ResultView } from './Results';

// /r/<run-id>: a run record of any front end (the Studio's runs and trainings, `scellis run` and
// `scellis train`): what ran, where, under which guarantee, the values it kept, its document one
// click away, and a replay on the server with the same guarantees and refusals as `scellis replay`.
export function RunRecord({ id }: { id: string }) {
  const [record, setRecord] = useState<JsonObject | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [verdict, setVerdict] = useState<ReplayVerdict | null>(null);
  const [replayState, setReplayState] = useState<string | null>(null);
  useEffect(() => {
    api.getRun(id).then(setRecord, (e) => setError(errorText(e)));
  }, [id]);
  if (error) return <div className="diag-error page" data-testid="run-record-error">{error}</div>;
  if (!record) return <div className="muted page">loading the run record…</div>;
  const docId = typeof record.document_id === 'string' ? record.document_id : '';
  const tolerance = isObject(record.tolerance) ? record.tolerance : null;
  const values = isObject(record.values) ? record.values : {};
  const digestOnly = Object.entries(values).filter(([, v]) => v === null).map(([k]) => k);

  const doReplay = async () => {
    setReplayState('replaying on the server…');
    setVerdict(null);
    try {
      const v = readReplayVerdict(await api.replayRun(id));
      if (!v) throw new Error('the server gave no verdict');
      setVerdict(v);
      setReplayState(null);
    } catch (err) {
      // A refusal (another device profile, a backend this server lacks, a tampered record) is
      // shown by its code: the replay was not downgraded.
      setReplayState(`replay refused: ${errorText(err)}`);
    }
  };

  return (
    <div className="page run-record" data-testid="run-record">
      <h2>Run {id.slice(0, 19)}…</h2>
      <table className="kv">
        <tbody>
          {recordScalars(record).map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td data-testid={`record-${k}`}>{v === null ? 'none' : String(v)}</td>
            </tr>
          ))}
          {tolerance && (
            <tr>
              <th>tolerance</th>
              <td data-testid="record-tolerance">
                {String(tolerance.class)} (atol {String(tolerance.atol)}, rtol {String(tolerance.rtol)})
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <p>
        {docId && (
          <a href={`/w/${docId}`} data-testid="record-open-document">
            open its document
          </a>
        )}{' '}
        <button data-testid="record-replay" onClick={doReplay}>
          Replay on the server
        </button>{' '}
        {replayState && <span className="muted" data-testid="record-replay-status">{replayState}</span>}
      </p>
      {verdict && (
        <div className={`comparison ${verdict.agree ? 'pass' : 'fail'}`} data-testid="replay-verdict" data-agree={verdict.agree}>
          <b>{verdict.headline}</b>
          <table>
            <tbody>
              {verdict.rows.map((r) => (
                <tr key={r.name} className={r.ok ? '' : 'diag-error'} data-testid={`replay-${r.name}`}>
                  <th>{r.name}</th>
                  <td>{r.how}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ResultView
        testid="record-result"
        r={{
          title: 'recorded outputs',
          backend: String(record.backend ?? '?'),
          executor: String(record.executor ?? '?'),
          fallbackReason: (record.fallback_reason ?? null) as string | null,
          outputs: toTensors(values),
          note: digestOnly.length ? `kept as digests only (too large to keep): ${digestOnly.join(', ')}` : undefined,
        }}
      />
      {(['settings', 'inputs', 'outputs', 'receipts'] as const).map((k) =>
        record[k] !== undefined ? (
          <details key={k}>
            <summary>{k}</summary>
            <pre className="code" data-testid={`record-${k}-json`}>{JSON.stringify(record[k], null, 2)}</pre>
          </details>
        ) : null,
      )}
    </div>
  );
}
