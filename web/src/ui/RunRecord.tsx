import { useEffect, useState } from 'react';
import { api, errorText } from '../api';
import { isObject, type JsonObject } from '../model/json';
import { toTensors } from '../model/tensors';
import { ResultView } from './Results';

// /r/<run-id>: the stored record of a run (tier, backend, executor, receipts, outputs), with its
// document one click away and a replay on the server.
export function RunRecord({ id }: { id: string }) {
  const [record, setRecord] = useState<JsonObject | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.getRun(id).then(setRecord, (e) => setError(errorText(e)));
  }, [id]);
  if (error) return <div className="diag-error page" data-testid="run-record-error">{error}</div>;
  if (!record) return <div className="muted page">loading the run record…</div>;
  const docId = String(record.document_id ?? record.content_id ?? '');
  const scalars = Object.entries(record).filter(([k, v]) => k !== 'outputs' && k !== 'receipts' && !isObject(v) && !Array.isArray(v));
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
            open its document (and replay it)
          </a>
        </p>
      )}
      <ResultView
        testid="record-result"
        r={{
          title: 'recorded outputs',
          backend: String(record.backend ?? '?'),
          executor: String(record.executor ?? '?'),
          fallbackReason: (record.fallback_reason ?? null) as string | null,
          outputs: toTensors(record.outputs),
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
