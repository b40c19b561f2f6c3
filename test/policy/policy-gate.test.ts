import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type Approver,
  createRuntime,
  type Policy,
  type PolicyDecisionFact,
  PolicyDeniedError,
  type PolicyRequest,
  type Runtime,
  type TetherError,
} from '../../src/index.js';

let rt: Runtime | undefined;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-policy-'));
});
afterEach(async () => {
  await rt?.dispose();
  rt = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const start = async (policy?: Policy) => {
  rt = await createRuntime({ spillDir: false, cwd: dir, ...(policy ? { policy } : {}) });
  return rt;
};

// Every live process whose command line names `marker` (read from /proc, not from the runtime).
function processesNaming(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function denial(work: Promise<unknown>): Promise<PolicyDeniedError> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PolicyDeniedError);
  expect((err as TetherError).code).toBe('POLICY_DENIED');
  return err as PolicyDeniedError;
}

// An approver that records what it was asked and answers when the test says so.
function heldApprover() {
  const asked: { request: PolicyRequest; signal: AbortSignal }[] = [];
  let notify: () => void = () => {};
  const firstAsk = new Promise<void>((resolve) => {
    notify = resolve;
  });
  const approve: Approver = (request, signal) => {
    asked.push({ request, signal });
    notify();
    return new Promise(() => {}); // never answers by itself
  };
  return { approve, asked, firstAsk };
}

describe('the policy step (A1)', () => {
  it('A1: without a policy everything runs as before', async () => {
    const r = await start();
    expect((await r.shell.run({ command: 'echo ok' })).output).toBe('ok\n');
  });

  it('A1: a denied command starts no process and registers no job, on every entry', async () => {
    const r = await start({ default: 'deny' });
    const lease = r.owners.host();
    const marker = `${dir}/never-created`;
    const command = `touch ${marker}; sleep 1000.4242`;
    const denials = [
      await denial(r.shell.run({ command, owner: lease.token })),
      await denial(r.shell.background(lease.token, { command })),
      await denial(r.persistentBash.run(lease.token, command)),
      await denial(r.terminals.open(lease.token)),
    ];
    expect(denials.map((d) => [d.request.action, d.decidedBy])).toEqual([
      ['shell.run', 'rule'],
      ['shell.background', 'rule'],
      ['persistent-bash', 'rule'],
      ['terminal.open', 'rule'],
    ]);
    expect(denials[0]!.reason).toContain('the default is deny');
    expect(await r.jobs.list(lease.token)).toEqual([]);
    expect(await r.terminals.list(lease.token)).toEqual([]);
    const stats = r.stats();
    expect(stats.terminals.open).toBe(0); // not even the persistent bash's hidden shell
    expect(stats.jobs).toMatchObject({ running: 0 });
    expect(stats.processes).toBe(0);
    expect(processesNaming('sleep 1000.4242')).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('A1: terminals.execute is judged per command inside an allowed terminal', async () => {
    const r = await start({
      default: 'deny',
      rules: [
        { decision: 'allow', prefix: ['/bin/bash'] },
        { decision: 'allow', prefix: ['echo'] },
      ],
    });
    const lease = r.owners.host();
    const term = await r.terminals.open(lease.token);
    expect((await r.terminals.execute(lease.token, term.id, 'echo inside')).output).toBe('inside\n');
    const marker = `${dir}/executed`;
    const d = await denial(r.terminals.execute(lease.token, term.id, `touch ${marker}`));
    expect(d.request.action).toBe('terminal.execute');
    expect(
      (await r.terminals.execute(lease.token, term.id, `echo "$(ls ${dir})"`).catch((e) => e)).code,
    ).toBe('POLICY_DENIED'); // an undecidable shape with no approver
    expect(existsSync(marker)).toBe(false);
  });

  it('A1: raw input is allowed in a terminal opened under the policy; rawInput deny refuses it', async () => {
    const allowTerminals = { decision: 'allow' as const, prefix: ['/bin/bash'] };
    const r = await start({ default: 'deny', rules: [allowTerminals] });
    const lease = r.owners.host();
    const term = await r.terminals.open(lease.token);
    // A long silence budget: the stdin_read proof answers first, whatever the machine's load.
    const sent = await r.terminals.send(lease.token, term.id, 'echo raw-$((40+2))\n', { settleMs: 10_000 });
    expect(sent.output).toContain('raw-42');
    await r.dispose();

    const strict = await start({ default: 'deny', rules: [allowTerminals], rawInput: 'deny' });
    const other = strict.owners.host();
    const t2 = await strict.terminals.open(other.token);
    const d = await denial(strict.terminals.send(other.token, t2.id, 'echo no\n'));
    expect(d.reason).toContain('rawInput: deny');
  });

  it('A1: the approver sees the caller (never the token), the parsed commands, cwd, sandbox and justification', async () => {
    const seen: PolicyRequest[] = [];
    rt = await createRuntime({
      spillDir: false,
      cwd: dir,
      sandbox: { mode: 'workspace-write', network: 'none' },
      policy: {
        approve: (request) => {
          seen.push(request);
          return 'allow';
        },
      },
    });
    const agent = rt.agents.create({ sessionId: 'reviewer', onTurn: () => {} });
    const r = await agent.tools.call('bash', {
      command: 'ls | wc -l && echo done',
      justification: 'count the files',
    });
    expect(r.ok, r.text).toBe(true);
    const [request] = seen;
    expect(request).toMatchObject({
      action: 'shell.run',
      caller: { kind: 'agent', sessionId: 'reviewer', agentId: agent.id },
      command: 'ls | wc -l && echo done',
      cwd: dir,
      sandbox: { mode: 'workspace-write', network: 'none' },
      justification: 'count the files',
      escalate: null,
      verdict: 'ask',
    });
    expect(request!.commands.map((c) => c.argv)).toEqual([['ls'], ['wc', '-l'], ['echo', 'done']]);
    const reachable = new Set<unknown>();
    const visit = (v: unknown) => {
      if (typeof v !== 'object' || v === null || reachable.has(v)) return;
      reachable.add(v);
      for (const child of Object.values(v)) visit(child);
    };
    visit(request);
    expect(reachable.has(agent.owner)).toBe(false);
    await agent.dispose();
  });

  it('A1: an approver that allows lets the command run; one that denies refuses it with its reason', async () => {
    const r = await start({
      approve: (request) =>
        request.command.includes('ok') ? 'allow' : { decision: 'deny', reason: 'not during the demo' },
    });
    expect((await r.shell.run({ command: 'echo ok' })).output).toBe('ok\n');
    const d = await denial(r.shell.run({ command: `touch ${dir}/no` }));
    expect([d.decidedBy, d.reason]).toEqual(['approver', 'not during the demo']);
    expect(existsSync(`${dir}/no`)).toBe(false);
  });

  it('A1: an approver that throws, or answers nonsense, denies (fail closed)', async () => {
    const r = await start({
      approve: (request) => {
        if (request.command.startsWith('echo 1')) throw new Error('approval service down');
        return 'yes' as never;
      },
    });
    const thrown = await denial(r.shell.run({ command: 'echo 1' }));
    expect([thrown.decidedBy, thrown.reason]).toEqual([
      'error',
      expect.stringContaining('approval service down'),
    ]);
    const nonsense = await denial(r.shell.run({ command: 'echo 2' }));
    expect(nonsense.decidedBy).toBe('error');
  });

  it('A1: an approver that never answers is denied at askTimeoutMs, and its signal is aborted', async () => {
    const held = heldApprover();
    const r = await start({ approve: held.approve, askTimeoutMs: 300 });
    const lease = r.owners.host();
    const d = await denial(r.shell.background(lease.token, { command: 'sleep 1000.4243' }));
    expect(d.decidedBy).toBe('timeout');
    expect(held.asked[0]!.signal.aborted).toBe(true);
    expect(await r.jobs.list(lease.token)).toEqual([]);
    expect(processesNaming('sleep 1000.4243')).toEqual([]);
    expect(r.stats().policy.asking).toBe(0);
  });

  it('A1: aborting the call during an ask ends it: a cancelled result, an ABORTED start, nothing started', async () => {
    const held = heldApprover();
    const r = await start({ approve: held.approve });
    const lease = r.owners.host();
    const call = new AbortController();
    const running = r.shell.run({ command: 'sleep 1000.4244', signal: call.signal });
    await held.firstAsk;
    expect(r.stats().policy.asking).toBe(1);
    expect(r.stats().waiters).toBeGreaterThanOrEqual(1); // a pending ask is a waiter (D3)
    call.abort();
    expect(await running).toMatchObject({ cancelled: true, exitCode: null });
    expect(held.asked[0]!.signal.aborted).toBe(true);

    const job = new AbortController();
    const starting = r.shell.background(lease.token, { command: 'sleep 1000.4244', signal: job.signal });
    while (held.asked.length < 2) await new Promise((resolve) => setImmediate(resolve));
    job.abort();
    expect(((await starting.catch((e) => e)) as TetherError).code).toBe('ABORTED');
    expect(await r.jobs.list(lease.token)).toEqual([]);
    expect(processesNaming('sleep 1000.4244')).toEqual([]);
    expect(r.stats().policy.asking).toBe(0);
  });

  it('A1/D2: dispose during an ask ends it at once; the call fails RUNTIME_DISPOSED and stats are zero', async () => {
    const held = heldApprover();
    const r = await start({ approve: held.approve, askTimeoutMs: 3_600_000 });
    const lease = r.owners.host();
    const pending = r.terminals.open(lease.token).catch((e: unknown) => e);
    await held.firstAsk;
    await r.dispose(); // would hang for an hour if the ask held teardown
    expect(((await pending) as TetherError).code).toBe('RUNTIME_DISPOSED');
    expect(held.asked[0]!.signal.aborted).toBe(true);
    const stats = r.stats();
    expect([stats.waiters, stats.timers, stats.policy.asking, stats.terminals.open]).toEqual([0, 0, 0, 0]);
  });

  it('A1: an agent’s policy replaces the runtime’s for its owner only', async () => {
    const r = await start({ default: 'allow' });
    const agent = r.agents.create({ sessionId: 'locked', onTurn: () => {}, policy: { default: 'deny' } });
    const result = await agent.tools.call('bash', { command: `touch ${dir}/agent` });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.code).toBe('POLICY_DENIED');
      expect(result.text).toContain('touch');
      expect(result.text).toContain('the default is deny');
      expect(result.text).toContain('Nothing was started');
    }
    expect(existsSync(`${dir}/agent`)).toBe(false);
    const host = r.owners.host();
    expect((await r.shell.run({ command: 'echo host', owner: host.token })).output).toBe('host\n');
    await agent.dispose();
  });

  it('A1: every decision is a fact for the onDecision hook', async () => {
    const facts: PolicyDecisionFact[] = [];
    const r = await start({
      rules: [{ decision: 'deny', prefix: ['rm'] }],
      default: 'allow',
      onDecision: (fact) => facts.push(fact),
    });
    await r.shell.run({ command: 'true' });
    await denial(r.shell.run({ command: 'rm -rf /nope' }));
    expect(facts.map((f) => [f.request.command, f.outcome, f.decidedBy, f.askMs])).toEqual([
      ['true', 'allow', 'rule', null],
      ['rm -rf /nope', 'deny', 'rule', null],
    ]);
  });

  it('A1: a bad policy fails at createRuntime and agents.create with INVALID_ARGUMENT', async () => {
    const bad = await createRuntime({ policy: { default: 'maybe' as never } }).catch((e: unknown) => e);
    expect((bad as TetherError).code).toBe('INVALID_ARGUMENT');
    const r = await start();
    expect(() =>
      r.agents.create({
        sessionId: 'x',
        onTurn: () => {},
        policy: { rules: [{ decision: 'allow', prefix: [] }] },
      }),
    ).toThrow(/prefix/);
  });
});

describe('escalation (A4)', () => {
  it('A4: an approved escalation runs; the approver saw the justification', async () => {
    const held: PolicyRequest[] = [];
    const r = await start({
      default: 'allow',
      approve: (request) => {
        held.push(request);
        return request.escalate?.justification.includes('cache') ? 'allow' : 'deny';
      },
    });
    const ok = await r.shell.run({
      command: 'echo outside',
      escalate: { justification: 'write the npm cache' },
    });
    expect(ok.output).toBe('outside\n');
    expect(held[0]).toMatchObject({ escalate: { justification: 'write the npm cache' }, verdict: 'ask' });
    const refused = await denial(
      r.shell.run({ command: 'echo outside', escalate: { justification: 'because' } }),
    );
    expect([refused.decidedBy, refused.message]).toEqual([
      'approver',
      expect.stringContaining('outside the sandbox'),
    ]);
  });

  it('A4: escalation is denied where there is no approver, with or without a policy', async () => {
    const r = await start();
    const d = await denial(r.shell.run({ command: 'echo x', escalate: { justification: 'need it' } }));
    expect(d.decidedBy).toBe('rule');
    expect(d.reason).toContain('no approver');
    await r.dispose();
    const r2 = await start({ default: 'allow', rules: [{ decision: 'allow', prefix: ['echo'] }] });
    expect(
      (await denial(r2.shell.run({ command: 'echo x', escalate: { justification: 'need it' } }))).decidedBy,
    ).toBe('rule');
  });

  it('A4: the bash tool asks for escalation with escalate + justification, and says what to do when refused', async () => {
    const r = await start({ default: 'allow' });
    const lease = r.owners.host();
    const missing = await r.tools.call(lease.token, 'bash', { command: 'echo x', escalate: true });
    expect(missing.ok).toBe(false);
    expect(missing.ok ? '' : missing.code).toBe('INVALID_ARGUMENT');
    const refused = await r.tools.call(lease.token, 'bash', {
      command: 'echo x',
      escalate: true,
      justification: 'needs the network',
    });
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.code).toBe('POLICY_DENIED');
      expect(refused.text).toContain('outside the sandbox');
      expect(refused.text).toContain('Do the task inside the sandbox');
    }
  });
});
