// What one step of a device program needs fed by the Studio. A training step's program has an
// input `step`, fed every step: the optimizer's 1-based step number, which Adam's bias correction
// reads (web/runtime/README.md). Other fed inputs (a batch) have no value the Studio could give;
// the runtime names any that stays missing.
import { isObject } from './json';

export function stepFeeds(program: unknown, step: number): Record<string, number[]> {
  const inputs = isObject(program) && Array.isArray(program.inputs) ? program.inputs : [];
  const feeds: Record<string, number[]> = {};
  for (const input of inputs) if (isObject(input) && input.fed === true && input.name === 'step') feeds.step = [step];
  return feeds;
}
