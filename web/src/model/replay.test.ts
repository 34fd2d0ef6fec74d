import { describe, expect, it } from 'vitest';
import { readReplayVerdict, recordScalars } from './replay';

describe('replay verdicts', () => {
  it('reads an agreeing bit-exact replay', () => {
    const v = readReplayVerdict({
      agree: true,
      guarantee: 'bit-exact',
      tolerance: { class: 'default', atol: 1e-5, rtol: 1e-4 },
      backend: 'cpu',
      profile: 'cpu-reference',
      disagreement: null,
      outputs: [{ name: 'y', ok: true, digest_equal: true, compared_values: false, max_abs_diff: 0 }],
    });
    expect(v).toEqual({
      agree: true,
      headline: 'agrees with the record bit for bit, on cpu (profile cpu-reference)',
      rows: [{ name: 'y', ok: true, how: 'equal bit for bit' }],
    });
  });

  it('names the first differing element and the disagreement', () => {
    const v = readReplayVerdict({
      agree: false,
      guarantee: 'tolerance',
      tolerance: { class: 'default', atol: 0.001, rtol: 0.01 },
      backend: 'webgpu',
      profile: 'p',
      disagreement: { code: 'replay-disagrees', message: 'output "y" differs' },
      outputs: [
        { name: 'x', ok: true, digest_equal: false, compared_values: true, max_abs_diff: 0.0005 },
        { name: 'y', ok: false, digest_equal: false, compared_values: true, first_difference: { element: 3, replayed: -3, recorded: 5 } },
        { name: 'z', ok: false, digest_equal: false, compared_values: false },
      ],
    });
    expect(v?.agree).toBe(false);
    expect(v?.headline).toBe('DISAGREES with the record within tolerance default (atol 0.001, rtol 0.01), on webgpu (profile p): replay-disagrees: output "y" differs');
    expect(v?.rows.map((r) => r.how)).toEqual([
      'within tolerance (max |Δ| 0.0005)',
      'differs at element 3: replayed -3, recorded 5',
      'differs (its digest; shape, dtype or a missing output)',
    ]);
    expect(readReplayVerdict({ error: {} })).toBeNull();
  });

  it('lists the record fields a reader scans first, then the other scalars', () => {
    const rows = recordScalars({ kind: 'scellis.run-record/2', run_id: 'r', zeta: 1, backend: 'cpu', command: 'run', outputs: {}, receipts: [] });
    expect(rows).toEqual([['command', 'run'], ['backend', 'cpu'], ['zeta', 1]]);
  });
});
