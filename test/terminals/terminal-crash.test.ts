import { afterEach, describe, expect, it } from 'vitest';
import { createOwnerRegistry } from '../../src/owners/owner-registry.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { crashPtyHostForTest, createPtyHost } from '../../src/subprocess/pty/pty-host.js';
import { createTerminalService } from '../../src/terminals/terminal-service.js';
import type { TerminalExit, TerminalService } from '../../src/terminals/terminal-types.js';

const host = createPtyHost();
let terminals: TerminalService | null = null;
afterEach(async () => {
  await terminals?.dispose();
  await host.dispose();
});

describe('terminal service over a crashing PTY worker', () => {
  it('T5, T4, W1: a worker crash mid-send ends the send with session_exit, kills the tree, and the next open works', async () => {
    const owners = createOwnerRegistry();
    const owner = owners.host().token;
    terminals = createTerminalService({
      owners,
      provider: createLocalProvider({ ptyHost: host }),
      defaults: { shell: '/bin/bash', cwd: '/tmp', cleanupGraceMs: 200 },
    });
    const exits: TerminalExit[] = [];
    using _sub = terminals.onSessionExit(owner, (exit) => void exits.push(exit));
    const t = await terminals.open(owner);
    await terminals.execute(owner, t.id, 'setsid sleep 1000 &');
    const sending = terminals.send(owner, t.id, 'while :; do echo tick; sleep 0.05; done\n', {
      settleMs: 10_000,
      timeoutMs: 60_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    crashPtyHostForTest(host, 'throw');
    expect((await sending).waitReason).toBe('session_exit');
    for (let i = 0; i < 200 && (await terminals.list(owner)).length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await terminals.list(owner)).toEqual([]);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    // W1: the crash is the terminal's completion, reported once its tree was swept.
    for (let i = 0; i < 200 && exits.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(exits).toEqual([expect.objectContaining({ id: t.id, reason: 'host_crashed' })]);
    const again = await terminals.open(owner);
    expect((await terminals.execute(owner, again.id, 'echo alive')).output).toBe('alive\n');
  });
});
