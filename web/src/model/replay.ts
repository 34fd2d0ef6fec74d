// A replay's verdict as the server gives it (POST /api/runs/<id>/replay, record::Replay): the
// guarantee the record carries and, per output, how the replay compares with the record.
import { isObject } from './json';

export interface ReplayRow {
  name: string;
  ok: boolean;
  how: string;
}

export interface ReplayVerdict {
  agree: boolean;
  headline: string;
  rows: ReplayRow[];
}

function num(v: unknown): string {
  return typeof v === 'number' ? String(v) : String(v ?? '?');
}

export function readReplayVerdict(v: unknown): ReplayVerdict | null {
  if (!isObject(v) || typeof v.agree !== 'boolean') return null;
  const tolerance = isObject(v.tolerance) ? v.tolerance : {};
  const guarantee =
    v.guarantee === 'tolerance'
      ? `within tolerance ${String(tolerance.class ?? '?')} (atol ${num(tolerance.atol)}, rtol ${num(tolerance.rtol)})`
      : 'bit for bit';
  const where = `on ${String(v.backend ?? '?')} (profile ${String(v.profile ?? '?')})`;
  let headline = `${v.agree ? 'agrees with' : 'DISAGREES with'} the record ${guarantee}, ${where}`;
  if (!v.agree && isObject(v.disagreement)) headline += `: ${String(v.disagreement.code)}: ${String(v.disagreement.message)}`;
  const rows: ReplayRow[] = [];
  for (const o of Array.isArray(v.outputs) ? v.outputs : []) {
    if (!isObject(o)) continue;
    const first = isObject(o.first_difference) ? o.first_difference : null;
    let how: string;
    if (o.digest_equal === true) how = 'equal bit for bit';
    else if (o.ok === true) how = `within tolerance (max |Δ| ${num(o.max_abs_diff)})`;
    else if (first) how = `differs at element ${num(first.element)}: replayed ${num(first.replayed)}, recorded ${num(first.recorded)}`;
    else how = o.compared_values === true ? 'differs' : 'differs (its digest; shape, dtype or a missing output)';
    rows.push({ name: String(o.name), ok: o.ok === true, how });
  }
  return { agree: v.agree, headline, rows };
}

// The record's fields a reader scans first, in this order; the rest of its scalars follow.
export const RECORD_FIRST_FIELDS = ['command', 'date', 'content_id', 'document_id', 'tier', 'backend', 'executor', 'device_profile', 'plan_hash', 'engine_version', 'fallback_reason'];

export function recordScalars(record: Record<string, unknown>): [string, unknown][] {
  const scalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
  const first = RECORD_FIRST_FIELDS.filter((k) => k in record && scalar(record[k])).map((k): [string, unknown] => [k, record[k]]);
  const rest = Object.entries(record).filter(([k, v]) => !RECORD_FIRST_FIELDS.includes(k) && k !== 'run_id' && k !== 'kind' && scalar(v));
  return [...first, ...rest];
}
