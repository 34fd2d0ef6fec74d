import { useEffect, useRef } from 'react';
import { as2d, type OutputComparison, type Tensor, type Thresholds } from '../model/tensors';

function ramp(t: number): [number, number, number] {
  // dark blue → teal → yellow, readable for 0/1 grids and smooth ranges alike
  const stops: [number, number, number][] = [
    [13, 8, 135],
    [33, 145, 140],
    [253, 231, 37],
  ];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  return [0, 1, 2].map((c) => Math.round(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f)) as [number, number, number];
}

// A 2-D tensor drawn with Canvas2D: one cell per element, the colour scaled from min to max.
export function Heatmap({ name, tensor }: { name: string; tensor: Tensor }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const dims = as2d(tensor);
  useEffect(() => {
    const c = ref.current;
    if (!c || !dims) return;
    const ctx = c.getContext('2d');
    if (!ctx) return;
    const { rows, cols } = dims;
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < tensor.data.length; ++i) {
      const v = tensor.data[i];
      if (Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    const img = ctx.createImageData(cols, rows);
    for (let i = 0; i < rows * cols; ++i) {
      const v = tensor.data[i];
      const [r, g, b] = Number.isFinite(v) ? ramp(hi > lo ? (v - lo) / (hi - lo) : 0.5) : [255, 0, 255];
      img.data.set([r, g, b, 255], i * 4);
    }
    c.width = cols;
    c.height = rows;
    ctx.putImageData(img, 0, 0);
  }, [tensor, dims?.rows, dims?.cols]);
  if (!dims) return null;
  const scale = Math.max(1, Math.floor(Math.min(240 / dims.cols, 240 / dims.rows)));
  return (
    <canvas
      ref={ref}
      className="heatmap"
      data-testid={`heatmap-${name}`}
      style={{ width: dims.cols * scale, height: dims.rows * scale }}
      title={`${name}: ${dims.rows}×${dims.cols}`}
    />
  );
}

function fmt(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 1e-3 && Math.abs(v) < 1e5 ? v.toPrecision(6).replace(/\.?0+$/, '') : v.toExponential(4);
}

const MAX_CELLS = 400;

export function TensorTable({ name, tensor }: { name: string; tensor: Tensor }) {
  const cols = tensor.shape.length >= 1 ? tensor.shape[tensor.shape.length - 1] || 1 : 1;
  const n = Math.min(tensor.data.length, MAX_CELLS);
  const rows: number[][] = [];
  for (let i = 0; i < n; i += cols) rows.push(Array.from({ length: Math.min(cols, n - i) }, (_, j) => tensor.data[i + j]));
  return (
    <table className="tensor" data-testid={`result-table-${name}`} data-values={Array.from(tensor.data.length <= MAX_CELLS ? tensor.data : []).map(fmt).join(' ')}>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i}>
            {r.map((v, j) => (
              <td key={j}>{fmt(v)}</td>
            ))}
          </tr>
        ))}
      </tbody>
      {tensor.data.length > MAX_CELLS && (
        <tfoot>
          <tr>
            <td colSpan={cols}>… {tensor.data.length - MAX_CELLS} more values</td>
          </tr>
        </tfoot>
      )}
    </table>
  );
}

export interface ResultInfo {
  title: string;
  backend: string;
  executor: string;
  fallbackReason: string | null;
  outputs: Record<string, Tensor>;
  runId?: string | null;
  steps?: number;
  note?: string;
}

export function ResultView({ r, testid }: { r: ResultInfo; testid: string }) {
  return (
    <div className="result" data-testid={testid}>
      <div className="result-head">
        <b>{r.title}</b>
        <span data-testid={`${testid}-backend`}>
          backend <code>{r.backend}</code>
        </span>
        <span data-testid={`${testid}-executor`}>
          executor <code>{r.executor}</code>
        </span>
        <span data-testid={`${testid}-fallback`} className={r.fallbackReason ? 'fallback' : ''}>
          fallback: {r.fallbackReason ?? 'none'}
        </span>
        {r.steps !== undefined && <span>steps {r.steps}</span>}
        {r.runId && (
          <a href={`/r/${r.runId}`} data-testid={`${testid}-record`}>
            run record
          </a>
        )}
      </div>
      {r.note && <div className="muted">{r.note}</div>}
      {Object.entries(r.outputs).map(([name, t]) => (
        <div className="output" key={name}>
          <div className="output-name">
            {name} <span className="muted">[{t.shape.join(', ')}] {t.dtype}</span>
          </div>
          <div className="output-views">
            <Heatmap name={`${testid}-${name}`} tensor={t} />
            <TensorTable name={`${testid}-${name}`} tensor={t} />
          </div>
        </div>
      ))}
    </div>
  );
}

export function ComparisonView({ rows, thresholds, reference, bits = false }: { rows: OutputComparison[]; thresholds: Thresholds; reference: string; bits?: boolean }) {
  const ok = rows.every((r) => r.ok);
  return (
    <div className={`comparison ${ok ? 'pass' : 'fail'}`} data-testid="comparison" data-ok={ok} data-bits={bits}>
      <b>{ok ? 'matches' : 'DIFFERS FROM'} {reference}</b> {bits ? 'bit for bit' : `within atol ${thresholds.atol}, rtol ${thresholds.rtol}`}
      <table>
        <thead>
          <tr>
            <th>output</th>
            <th>elements</th>
            <th>mismatches</th>
            <th>max |Δ|</th>
            <th>worst |Δ| / allowed</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name} className={r.ok ? '' : 'diag-error'} data-testid={`comparison-${r.name}`}>
              <td>{r.name}</td>
              <td>{r.elements}</td>
              <td>{r.mismatches}</td>
              <td>{fmt(r.maxAbsError)}</td>
              <td>{fmt(r.worstRatio)}</td>
              <td>{r.problem ?? (r.firstMismatch ? `first at ${r.firstMismatch.index}: ${fmt(r.firstMismatch.got)} vs ${fmt(r.firstMismatch.want)}` : 'ok')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export interface LossPoint {
  step: number;
  loss: number;
}

// The loss as it arrives, in SVG: x is the step, y the loss (own scale, finite values only).
export function LossCurve({ points }: { points: LossPoint[] }) {
  const W = 420;
  const H = 180;
  const pad = 36;
  // Room left of the axis for a value of six significant digits ("1.66657") at the chart's font.
  const left = 52;
  const finite = points.filter((p) => Number.isFinite(p.loss));
  const xs = finite.map((p) => p.step);
  const ys = finite.map((p) => p.loss);
  const x0 = Math.min(...xs, 0);
  const x1 = Math.max(...xs, 1);
  const y0 = Math.min(...ys, Infinity);
  const y1 = Math.max(...ys, -Infinity);
  const ylo = finite.length ? (y1 > y0 ? y0 : y0 - 1) : 0;
  const yhi = finite.length ? (y1 > y0 ? y1 : y1 + 1) : 1;
  const X = (s: number) => left + ((s - x0) / Math.max(1e-12, x1 - x0)) * (W - left - 10);
  const Y = (l: number) => H - pad + 10 - ((l - ylo) / Math.max(1e-12, yhi - ylo)) * (H - pad - 10);
  const path = finite.map((p) => `${X(p.step).toFixed(1)},${Y(p.loss).toFixed(1)}`).join(' ');
  const last = finite[finite.length - 1];
  return (
    <svg className="loss-curve" data-testid="loss-curve" data-points={finite.length} data-first={finite[0]?.loss} data-last={last?.loss} width={W} height={H}>
      <line x1={left} y1={H - pad + 10} x2={W - 10} y2={H - pad + 10} className="axis" />
      <line x1={left} y1={10} x2={left} y2={H - pad + 10} className="axis" />
      <text x={left - 4} y={14} textAnchor="end" className="chart-value">
        {finite.length ? fmt(yhi) : ''}
      </text>
      <text x={left - 4} y={H - pad + 10} textAnchor="end" className="chart-value">
        {finite.length ? fmt(ylo) : ''}
      </text>
      <text x={W - 10} y={H - 8} textAnchor="end" className="chart-value">
        step {last ? last.step : 0}
      </text>
      <polyline points={path} className="loss-line" />
      {last && (
        <text x={W - 10} y={24} textAnchor="end" className="chart-label">
          loss {fmt(last.loss)}
        </text>
      )}
    </svg>
  );
}
