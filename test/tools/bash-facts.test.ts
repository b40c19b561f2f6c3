import { describe, expect, it } from 'vitest';
import type { ShellResult } from '../../src/index.js';
import { shellFacts } from '../../src/tools/bash-tool.js';

// What the model reads of a result whose exit the runtime could not see (issue 30.3).
describe('bash tool facts', () => {
  it('C1, M: a result lost with the spawner says so and why, never "killed by a signal"', () => {
    const lost = {
      exitCode: null,
      signal: null,
      timedOut: false,
      cancelled: false,
      drainTimedOut: false,
      durationMs: 12,
      lost: 'spawner',
      lostReason: 'the spawner process died (SIGKILL) before it reported the exit',
    } as unknown as ShellResult;
    const text = shellFacts(lost, 1000);
    expect(text).toContain('[result lost: the spawner process died (SIGKILL) before it reported the exit');
    expect(text).not.toContain('killed by');
  });
});
