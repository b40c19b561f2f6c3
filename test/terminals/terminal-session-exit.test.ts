import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, type TerminalExit, TetherError } from '../../src/index.js';
import { waitFor } from '../support/spawn-tree.js';

let rt: Runtime;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 300 } });
});
afterEach(async () => {
  await rt.dispose();
});

function thrownCode(call: () => unknown): string {
  try {
    call();
  } catch (err) {
    return err instanceof TetherError ? err.code : String(err);
  }
  return 'did not throw';
}

describe('rt.terminals.onSessionExit', () => {
  it('W1: a shell that exits on its own is reported once, with its exit code; a closed terminal is not, and no other owner hears it', async () => {
    const [mine, other] = [rt.owners.host(), rt.owners.host()];
    const heard: TerminalExit[] = [];
    const overheard: TerminalExit[] = [];
    const sub = rt.terminals.onSessionExit(mine.token, (exit) => void heard.push(exit));
    const spy = rt.terminals.onSessionExit(other.token, (exit) => void overheard.push(exit));
    const exiting = await rt.terminals.open(mine.token, { cwd: '/tmp' });
    const closed = await rt.terminals.open(mine.token);
    const sent = await rt.terminals.send(mine.token, exiting.id, 'exit 3\r', { timeoutMs: 10_000 });
    expect(sent.waitReason).toBe('session_exit');
    await rt.terminals.close(mine.token, closed.id);
    await waitFor(() => heard.length > 0, 'the session exit');
    await waitFor(() => rt.terminals.stats().deliveries === 0, 'listener calls to settle');
    expect(heard).toEqual([
      expect.objectContaining({
        id: exiting.id,
        exitCode: 3,
        signal: null,
        reason: 'exit',
        cwd: '/tmp',
        pid: exiting.pid,
        openedAt: exiting.openedAt,
      }),
    ]);
    expect(heard[0]!.endedAt).toBeGreaterThanOrEqual(exiting.openedAt);
    expect(overheard).toEqual([]);
    expect(rt.terminals.stats().listeners).toBe(2);
    sub.dispose();
    spy.dispose();
    expect(rt.terminals.stats().listeners).toBe(0);
  });

  it('S5: an exit that happened while nobody listened is replayed to the next listener, and only once', async () => {
    const { token } = rt.owners.host();
    const t = await rt.terminals.open(token);
    await rt.terminals.send(token, t.id, 'exit 5\r', { timeoutMs: 10_000 });
    await waitFor(() => rt.terminals.stats().open === 0, 'the terminal to be swept');
    const first: TerminalExit[] = [];
    const late: TerminalExit[] = [];
    using _a = rt.terminals.onSessionExit(token, (exit) => void first.push(exit)); // joins, then the replay
    await waitFor(() => first.length > 0, 'the replayed exit');
    using _b = rt.terminals.onSessionExit(token, (exit) => void late.push(exit)); // already reported: not again
    await waitFor(() => rt.terminals.stats().deliveries === 0, 'listener calls to settle');
    expect(first.map((e) => [e.id, e.exitCode])).toEqual([[t.id, 5]]);
    expect(late).toEqual([]);
  });

  it('O3: subscribing needs a live owner and a function', async () => {
    const lease = rt.owners.host();
    expect(() => rt.terminals.onSessionExit(lease.token, 'cb' as never)).toThrow(
      /listener must be a function/,
    );
    expect(thrownCode(() => rt.terminals.onSessionExit('me' as never, () => {}))).toBe('OWNER_INVALID');
    lease.retire();
    expect(thrownCode(() => rt.terminals.onSessionExit(lease.token, () => {}))).toBe('OWNER_RETIRED');
  });
});
