import { describe, expect, it } from 'vitest';
import { canRedo, canUndo, LIMIT, push, redo, replace, start, undo } from './undo';

describe('undo stack', () => {
  it('undoes and redoes in order', () => {
    let h = start('a');
    h = push(h, 'b');
    h = push(h, 'c');
    h = undo(h);
    expect(h.present).toBe('b');
    h = undo(h);
    expect(h.present).toBe('a');
    expect(canUndo(h)).toBe(false);
    expect(undo(h)).toBe(h);
    h = redo(h);
    expect(h.present).toBe('b');
    h = redo(h);
    expect(h.present).toBe('c');
    expect(canRedo(h)).toBe(false);
  });

  it('a new edit drops the undone future', () => {
    let h = push(push(start(1), 2), 3);
    h = push(undo(h), 4);
    expect(h).toEqual({ past: [1, 2], present: 4, future: [] });
  });

  it('replace changes the present without an undo step; pushing the same value is no step', () => {
    let h = replace(push(start(1), 2), 5);
    expect(h.past).toEqual([1]);
    h = push(h, h.present);
    expect(h.past).toEqual([1]);
  });

  it('keeps a bounded past', () => {
    let h = start(0);
    for (let i = 1; i <= LIMIT + 50; ++i) h = push(h, i);
    expect(h.past).toHaveLength(LIMIT);
    expect(h.past[0]).toBe(50);
  });
});
