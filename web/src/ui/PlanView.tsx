import { isObject, type JsonObject } from '../model/json';

const CLASS_COLORS: Record<string, string> = {
  parameters: '#4e79a7',
  inputs: '#59a14f',
  activations: '#f28e2b',
  gradients: '#e15759',
  optimizer_state: '#b07aa1',
  working: '#76b7b2',
  master_weights: '#9c755f',
};

export function bytesText(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

// The memory plan by class as a bar chart (SVG), the budget as a line across it.
export function MemoryChart({ memory }: { memory: JsonObject }) {
  const byClass = isObject(memory.by_class) ? memory.by_class : {};
  const rows = Object.entries(byClass).map(([k, v]) => [k, typeof v === 'number' ? v : 0] as const);
  const budget = typeof memory.budget === 'number' && memory.budget > 0 ? memory.budget : null;
  const peak = typeof memory.peak_live === 'number' ? memory.peak_live : null;
  const allocated = typeof memory.allocated === 'number' ? memory.allocated : null;
  const max = Math.max(1, ...rows.map((r) => r[1]), allocated ?? 0, budget && budget < 64 * Math.max(1, ...rows.map((r) => r[1])) ? budget : 0);
  // Wide enough for the summary line under the bars ("allocated …, peak live …, budget 1.0 KiB").
  const W = 440;
  const rowH = 20;
  const labelW = 120;
  const H = rows.length * rowH + 30;
  const x = (v: number) => labelW + (v / max) * (W - labelW - 70);
  return (
    <svg className="memory-chart" data-testid="memory-chart" width={W} height={H} role="img" aria-label="memory by class">
      {rows.map(([name, v], i) => (
        <g key={name} transform={`translate(0, ${i * rowH})`}>
          <text x={labelW - 6} y={14} textAnchor="end" className="chart-label">
            {name}
          </text>
          <rect x={labelW} y={3} width={Math.max(v > 0 ? 1 : 0, x(v) - labelW)} height={rowH - 6} fill={CLASS_COLORS[name] ?? '#888'} data-testid={`memory-bar-${name}`} />
          <text x={x(v) + 4} y={14} className="chart-value">
            {bytesText(v)}
          </text>
        </g>
      ))}
      {allocated !== null && (
        <text x={labelW} y={rows.length * rowH + 20} className="chart-value">
          allocated {bytesText(allocated)}
          {peak !== null ? `, peak live ${bytesText(peak)}` : ''}
          {budget !== null ? `, budget ${bytesText(budget)}` : ''}
        </text>
      )}
      {budget !== null && budget <= max && <line x1={x(budget)} x2={x(budget)} y1={0} y2={rows.length * rowH} className="budget-line" />}
    </svg>
  );
}

export function PlanView({ plan, selectedStep, onSelectStep }: { plan: JsonObject; selectedStep: number | null; onSelectStep: (i: number, kernel: string) => void }) {
  const verdict = typeof plan.verdict === 'string' ? plan.verdict : 'unknown';
  const findings = Array.isArray(plan.findings) ? plan.findings.filter(isObject) : [];
  const steps = Array.isArray(plan.steps) ? plan.steps.filter(isObject) : [];
  const thresholds = isObject(plan.thresholds) ? plan.thresholds : null;
  return (
    <div className="plan">
      <div className={`verdict verdict-${verdict}`} data-testid="plan-verdict" data-verdict={verdict}>
        verdict: {verdict}
      </div>
      <div className="plan-facts">
        tier <b>{String(plan.determinism_tier ?? '?')}</b> ({String(plan.tier_source ?? '')}), tolerance <b>{String(plan.tolerance_class ?? '?')}</b>
        {thresholds && ` — atol ${thresholds.atol}, rtol ${thresholds.rtol}`}
      </div>
      {findings.length > 0 && (
        <ul className="findings" data-testid="plan-findings">
          {findings.map((f, i) => (
            <li key={i} className={verdict === 'red' ? 'diag-error' : 'diag-warning'}>
              <b>{String(f.code)}</b> {String(f.message)}
              {f.help ? <div className="help">help: {String(f.help)}</div> : null}
            </li>
          ))}
        </ul>
      )}
      {isObject(plan.memory) && <MemoryChart memory={plan.memory} />}
      {steps.length > 0 && (
        <table className="steps">
          <thead>
            <tr>
              <th>#</th>
              <th>kernel</th>
              <th>reads</th>
              <th>writes</th>
            </tr>
          </thead>
          <tbody>
            {steps.map((s, i) => (
              <tr key={i} className={selectedStep === i ? 'selected' : ''} data-testid={`plan-step-${i}`} onClick={() => onSelectStep(i, String(s.kernel))}>
                <td>{i}</td>
                <td>{String(s.kernel)}</td>
                <td>{Array.isArray(s.reads) ? s.reads.map((b) => `b${b}`).join(' ') : ''}</td>
                <td>{[s.write, ...(Array.isArray(s.extra_writes) ? s.extra_writes : [])].map((b) => `b${b}`).join(' ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
