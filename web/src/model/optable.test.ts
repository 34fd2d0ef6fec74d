import { describe, expect, it } from 'vitest';
import { table } from './fixtures';
import { checkAttrInput, inRange, normalizeOpTable, paletteGroups, parseRange } from './optable';

describe('op table', () => {
  it('reads ops and node types; a node type that is also an op keeps the op entry', () => {
    expect(table.byName.get('matmul')?.inputs.map((p) => p.name)).toEqual(['a', 'b']);
    expect(table.byName.get('input')?.nodeType).toBe(false);
    expect(table.byName.get('dataset')).toMatchObject({ nodeType: true, outputs: [] });
    expect(table.byName.get('relu')?.outputs).toEqual([{ name: 'out', dtypes: [], role: 'operand' }]);
    expect(paletteGroups(table).map((g) => g.family)).toContain('elementwise');
  });

  it('reads ranges in each form the engine writes', () => {
    expect(parseRange('(0, 1e+30]')).toEqual({ low: 0, high: 1e30, lowOpen: true, highOpen: false });
    expect(parseRange({ low: 0, high: 0.9999999 })).toEqual({ low: 0, high: 0.9999999, lowOpen: false, highOpen: false });
    expect(parseRange([1e-30, 1e30])).toEqual({ low: 1e-30, high: 1e30, lowOpen: false, highOpen: false });
    expect(parseRange('nonsense')).toBeNull();
    const lr = table.byName.get('sgd_update')!.attrs.find((a) => a.name === 'lr')!;
    expect(lr.range).toEqual({ low: 0, high: 1e30, lowOpen: true, highOpen: false });
    expect(inRange(lr.range!, 0)).toBe(false);
    expect(inRange(lr.range!, 1e30)).toBe(true);
  });

  it('refuses a number outside its range as it is typed', () => {
    const lr = table.byName.get('sgd_update')!.attrs.find((a) => a.name === 'lr')!;
    expect(checkAttrInput(lr, '0.01')).toEqual({ ok: true, value: 0.01 });
    expect(checkAttrInput(lr, '0')).toEqual({ ok: false, reason: '0 is outside (0, 1e+30]' });
    expect(checkAttrInput(lr, '3e38')).toEqual({ ok: false, reason: '3e+38 is outside (0, 1e+30]' });
    expect(checkAttrInput(lr, '1e')).toEqual({ ok: false, reason: '"1e" is not a number' });
    expect(checkAttrInput(lr, '')).toEqual({ ok: true, value: undefined });
  });

  it('checks each attribute type', () => {
    const attrs = (op: string) => new Map(table.byName.get(op)!.attrs.map((a) => [a.name, a]));
    const mean = attrs('mean');
    expect(checkAttrInput(mean.get('axis')!, '1.5')).toEqual({ ok: false, reason: '"axis" takes an integer' });
    expect(checkAttrInput(mean.get('axis')!, '-1')).toEqual({ ok: true, value: -1 });
    expect(checkAttrInput(mean.get('keepdim')!, 'yes')).toEqual({ ok: false, reason: 'true or false' });
    const input = attrs('input');
    expect(checkAttrInput(input.get('shape')!, '["N", 3]')).toEqual({ ok: true, value: ['N', 3] });
    expect(checkAttrInput(input.get('shape')!, '[-1]').ok).toBe(false);
    expect(checkAttrInput(input.get('shape')!, '').ok).toBe(false);
    expect(checkAttrInput(input.get('data')!, '[1, "a"]').ok).toBe(false);
    expect(checkAttrInput(attrs('param').get('init')!, '{"kind": "uniform"}')).toEqual({ ok: true, value: { kind: 'uniform' } });
  });

  it('tolerates an empty or odd answer', () => {
    expect(normalizeOpTable(null).list).toEqual([]);
    const t = normalizeOpTable({ ops: [{ name: 'x', ports: ['a'], attrs: { k: { type: 'int' } } }] });
    expect(t.byName.get('x')).toMatchObject({ inputs: [{ name: 'a', dtypes: ['f32'] }], attrs: [{ name: 'k', type: 'integer' }] });
  });
});
