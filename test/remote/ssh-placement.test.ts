import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { type Sshd, startSshd } from './sshd-fixture.js';

// Which helper started the command: its parent's command line names that host's helper directory.
const WHERE = `tr '\\0' ' ' < /proc/$PPID/cmdline`;

// X4: one runtime, owners on two hosts (two sshd instances, each with its own helper).
describe('placement on ssh providers (X4)', () => {
  let hosts: Sshd[] = [];
  let rt: Runtime;
  afterEach(async () => {
    await rt.dispose(); // disposes both providers
    for (const host of hosts.splice(0)) await host.stop();
  });

  it('X4: a host lease and an agent each run on their own ssh provider; the job completion wakes the agent', async () => {
    hosts = [await startSshd(), await startSshd()];
    const [one, two] = hosts as [Sshd, Sshd];
    rt = await createRuntime({ cwd: '/tmp', limits: { cleanupGraceMs: 500 } });

    const lease = rt.owners.host({ provider: one.provider() });
    const job = await rt.shell.background(lease.token, { command: WHERE });
    expect(await rt.jobs.wait(lease.token, job.id, 600_000)).toBe(true);
    expect((await rt.jobs.read(lease.token, job.id, 0)).text).toContain(one.dir);

    const notices: string[] = [];
    const outputs: string[] = [];
    let woke!: () => void;
    const woken = new Promise<void>((resolve) => {
      woke = resolve;
    });
    const agent = rt.agents.create({
      sessionId: 'on-host-two',
      provider: two.provider(),
      onTurn: async (turn) => {
        for (const item of turn.inbox.claim()) {
          if (item.kind !== 'user') notices.push(...item.jobs.map((j) => `${j.label} ${j.state}`));
        }
        if (turn.reason === 'notice') return woke();
        const r = await turn.agent.tools.call('bash', { command: WHERE });
        outputs.push(r.text);
        await turn.agent.tools.call('bash', {
          command: 'sleep 0.2; echo remote done',
          run_in_background: true,
        });
      },
    });
    agent.say('where do you run?');
    await woken; // the background job on host two ended and woke the agent
    await agent.idle();
    expect(outputs[0]).toContain(two.dir);
    expect(outputs[0]).not.toContain(one.dir);
    expect(notices).toEqual(['sleep 0.2; echo remote done succeeded']);
    await agent.dispose();
    await rt.jobs.drainOwner(lease.token);
    lease.retire();
  });
});
