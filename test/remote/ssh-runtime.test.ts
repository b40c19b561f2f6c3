import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { SshProvider } from '../../src/remote/ssh-provider.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { until } from '../support/waits.js';
import { type Sshd, startSshd } from './sshd-fixture.js';

// X1: the services and tools above the provider do not change: the same calls, another host.
describe('a runtime on the ssh provider (X1)', () => {
  let sshd: Sshd;
  let provider: SshProvider;
  let rt: Runtime;
  const start = async () => {
    sshd = await startSshd();
    provider = sshd.provider();
    rt = await createRuntime({ provider, cwd: '/tmp', limits: { cleanupGraceMs: 500 } });
    return rt;
  };
  afterEach(async () => {
    await rt.dispose();
    expect(provider.workers).toBe(0);
    await sshd.stop();
  });

  it('X1: shell.run quotes for the remote side exactly once (quotes, spaces, $, newlines, non-ASCII)', async () => {
    await start();
    const args = [`a "b" c`, '$HOME', "it's", 'x\ny', 'héllo wörld ✓', '`id`'];
    const quoted = args.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
    const r = await rt.shell.run({ command: `printf '[%s]\\n' ${quoted}` });
    expect(r.exitCode).toBe(0);
    expect(r.output).toBe(args.map((a) => `[${a}]\n`).join(''));
  });

  it('X1, J7: a background job of a TERM-ignoring remote tree is killed and leaves nothing', async () => {
    await start();
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, {
      command: `trap '' TERM INT; setsid sleep 1000 & sleep 1000 & echo started; wait`,
      timeoutMs: 600_000,
    });
    let seen = '';
    for (let cursor = 0, i = 0; !seen.includes('started') && i < 3000; i++) {
      const page = await rt.jobs.read(lease.token, job.id, cursor);
      seen += page.text;
      cursor = page.cursor;
      if (!seen.includes('started')) await pause(10);
    }
    expect(seen).toContain('started');
    // Bash and both sleeps, remotely. `started` can come while a sleep is still exec'ing (its
    // environ, where the marker is read, is unreadable for that moment): poll, bounded.
    await until(
      'bash and both sleeps',
      () => listTaggedProcesses(treeIdPrefix()).length,
      (n) => n === 3,
    );
    expect(await rt.jobs.kill(lease.token, job.id)).toBe('requested');
    expect(await rt.jobs.wait(lease.token, job.id, 600_000)).toBe(true);
    await rt.jobs.drainOwner(lease.token);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    lease.retire();
  });

  it('X1, T6: a remote terminal executes and proves `cat` waits for input (stdin_read)', async () => {
    await start();
    const lease = rt.owners.host();
    const t = await rt.terminals.open(lease.token, { cwd: '/tmp' });
    const e = await rt.terminals.execute(lease.token, t.id, 'cd / && echo "in $PWD"');
    expect(e).toMatchObject({ output: 'in /\n', exitCode: 0 });
    const r = await rt.terminals.send(lease.token, t.id, 'cat\n', { settleMs: 600_000 });
    expect(r.waitReason).toBe('stdin_read');
    await rt.terminals.close(lease.token, t.id);
    lease.retire();
  });

  it('X1, X3: a remote background job wakes its agent exactly once, across a reconnect', async () => {
    await start();
    const gate = join(sshd.dir, 'gate');
    const notices: string[] = [];
    let woke!: () => void;
    const woken = new Promise<void>((resolve) => {
      woke = resolve;
    });
    const agent = rt.agents.create({
      sessionId: 'remote-1',
      wake: 'wakeup',
      onTurn: async (turn) => {
        for (const item of turn.inbox.claim()) {
          if (item.kind !== 'user') notices.push(...item.jobs.map((j) => `${j.label} ${j.state}`));
        }
        if (turn.reason === 'notice') return woke();
        await turn.agent.tools.call('bash', {
          command: `while [ ! -e ${gate} ]; do sleep 0.01; done; echo done`,
          run_in_background: true,
        });
      },
    });
    agent.say('start the remote job');
    await agent.idle();
    // The connection drops while the job runs; the provider reconnects and re-attaches it.
    for (const pid of sshd.sshdPids().slice(1)) process.kill(pid, 'SIGKILL');
    await until(
      'the reconnect',
      () => provider.workers,
      (w) => w === 0,
    );
    await until(
      'the reconnect',
      () => provider.workers,
      (w) => w === 1,
    );
    writeFileSync(gate, '');
    await woken;
    await agent.idle();
    expect(notices).toEqual([`while [ ! -e ${gate} ]; do sleep 0.01; done; echo done succeeded`]);
    await agent.dispose();
  });
});
