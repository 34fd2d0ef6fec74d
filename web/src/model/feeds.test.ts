import { describe, expect, it } from 'vitest';
import { stepFeeds } from './feeds';

describe('step feeds', () => {
  it("feeds a training program's step number and nothing else", () => {
    // The inputs of mlp_step's device program (POST /api/program), abridged.
    const program = {
      inputs: [
        { name: 'x', role: 'input', fed: false, carried: false, initial: true, shape: [4, 3] },
        { name: 'w1', role: 'param', fed: false, carried: true, initial: true, shape: [3, 5] },
        { name: 'step', role: 'input', fed: true, carried: false, initial: false, shape: [] },
        { name: 'w1@m', role: 'input', fed: false, carried: true, initial: true, shape: [3, 5] },
      ],
    };
    expect(stepFeeds(program, 1)).toEqual({ step: [1] });
    expect(stepFeeds(program, 7)).toEqual({ step: [7] });
  });

  it('feeds nothing to a program without a step input', () => {
    expect(stepFeeds({ inputs: [{ name: 'x', fed: false }] }, 3)).toEqual({});
    expect(stepFeeds({ inputs: [{ name: 'batch', fed: true }] }, 3)).toEqual({});
    expect(stepFeeds(null, 1)).toEqual({});
  });
});
