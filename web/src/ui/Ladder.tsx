import { useMemo } from 'react';
import { isObject, type JsonObject } from '../model/json';
import { wgslSources } from '../model/wgsl';
import { PlanView } from './PlanView';
import { Wgsl } from './Wgsl';

export const RUNGS = [
  ['doc', 'doc'],
  ['block', 'BlockIR'],
  ['webir', 'WebIR'],
  ['kernel', 'KernelIR'],
  ['execplan', 'ExecPlan'],
  ['workplan', 'WorkPlan'],
] as const;
export type RungName = (typeof RUNGS)[number][0];

function rung(rungs: JsonObject | null, name: string): { text: string; json: JsonObject | null; raw: JsonObject } | null {
  const all = rungs && isObject(rungs.rungs) ? rungs.rungs : null;
  const r = all?.[name];
  if (!isObject(r)) return null;
  return { text: typeof r.text === 'string' ? r.text : '', json: isObject(r.json) ? r.json : null, raw: r };
}

// The doc rung's text is canonical JSON on one line; it reads better indented.
function pretty(text: string): string {
  const t = text.trim();
  if (!t.startsWith('{')) return text;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return text;
  }
}

export interface LadderProps {
  rungs: JsonObject | null;
  program: JsonObject | null;
  loading: boolean;
  error: string | null;
  tab: RungName;
  onTab: (t: RungName) => void;
  selectedKernel: string | null;
  selectedStep: number | null;
  linkedKernels: string[];
  onSelectKernel: (name: string) => void;
  onSelectStep: (index: number, kernel: string) => void;
  onNeedProgram: () => void;
}

export function Ladder(p: LadderProps) {
  const sources = useMemo(() => wgslSources(rung(p.rungs, 'kernel')?.raw ?? null, p.program), [p.rungs, p.program]);
  const tabs = RUNGS.filter(([name]) => name !== 'workplan' || rung(p.rungs, 'workplan'));
  const r = rung(p.rungs, p.tab);
  let body: React.ReactNode;
  if (p.error) body = <div className="diag-error" data-testid="ladder-error">{p.error}</div>;
  else if (!p.rungs) body = <div className="muted">{p.loading ? 'lowering…' : 'The ladder appears once the document validates.'}</div>;
  else if (!r) body = <div className="muted">The server sent no {p.tab} rung.</div>;
  else if (p.tab === 'kernel') {
    const kernels = Array.isArray(r.json?.kernels) ? r.json!.kernels.filter(isObject) : [];
    const selected = p.selectedKernel ?? (kernels[0] ? String(kernels[0].name) : null);
    const src = selected ? sources.get(selected) : undefined;
    body = (
      <div className="kernel-rung">
        <ul className="kernel-list">
          {kernels.map((k) => {
            const name = String(k.name);
            const cls = [name === selected ? 'selected' : '', p.linkedKernels.includes(name) ? 'linked' : ''].join(' ');
            return (
              <li key={name} className={cls} data-testid={`kernel-${name}`} data-linked={p.linkedKernels.includes(name)} onClick={() => p.onSelectKernel(name)}>
                <b>{name}</b> <span className="muted">{String(k.op ?? k.kind ?? '')}</span>
                <div className="muted small">grid {Array.isArray(k.workgroups) ? k.workgroups.join('×') : ''} · wgsl {String(k.wgsl_sha256 ?? '').slice(0, 12)}</div>
              </li>
            );
          })}
        </ul>
        <div className="kernel-source">
          {src ? (
            <Wgsl source={src} testid="wgsl" />
          ) : (
            <div className="muted">
              {selected ? `No WGSL text for ${selected} in the kernel rung. ` : ''}
              <button onClick={p.onNeedProgram}>fetch the device program</button>
            </div>
          )}
          <details>
            <summary>rung text</summary>
            <pre className="code">{r.text}</pre>
          </details>
        </div>
      </div>
    );
  } else if (p.tab === 'execplan' && r.json) {
    body = (
      <div className="plan-rung">
        <PlanView plan={r.json} selectedStep={p.selectedStep} onSelectStep={p.onSelectStep} />
        <details>
          <summary>rung text</summary>
          <pre className="code">{r.text}</pre>
        </details>
      </div>
    );
  } else {
    body = <pre className="code">{pretty(r.text) || JSON.stringify(r.json, null, 2)}</pre>;
  }
  return (
    <div className="ladder" data-testid="ladder">
      <div className="tabs">
        {tabs.map(([name, title]) => (
          <button key={name} className={p.tab === name ? 'tab active' : 'tab'} data-testid={`rung-tab-${name}`} onClick={() => p.onTab(name)}>
            {title}
          </button>
        ))}
        {p.loading && <span className="muted small"> lowering…</span>}
      </div>
      <div className="tab-body" data-testid={`rung-${p.tab}`}>
        {body}
      </div>
    </div>
  );
}
