import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import {
  createRuntime,
  type Policy,
  PolicyDeniedError,
  type PolicyRequest,
  type Runtime,
} from '../../src/index.js';

/** A shape of attack: a command line that removes `witness` when bash runs it. */
export interface Shape {
  readonly name: string;
  readonly line: (witness: string) => string;
  /** What the denial's or the ask's reason must name (the evaluated word, lookup change, wrapped program). */
  readonly why: RegExp;
}

/** A runtime with `deny ['rm']` under `default`, an approver that records and answers (refuses by default), and a dir. */
export async function policyRuntime(
  defaultDecision: Policy['default'] = 'allow',
  answer: (request: PolicyRequest) => 'allow' | 'deny' = () => 'deny',
) {
  const dir = mkdtempSync(join(tmpdir(), 'tether-policy-sec-'));
  const asked: PolicyRequest[] = [];
  const rt = await createRuntime({
    spillDir: false,
    cwd: dir,
    policy: {
      rules: [{ decision: 'deny', prefix: ['rm'] }],
      default: defaultDecision,
      approve: (request) => {
        asked.push(request);
        const decision = answer(request);
        return { decision, reason: `${decision === 'deny' ? 'refused' : 'allowed'} by the test approver` };
      },
    },
  });
  return {
    rt,
    dir,
    asked,
    async close() {
      await rt.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Entry = (command: string) => Promise<unknown>;

// The four ways a command reaches a shell: one-shot, background job, terminal execute, the agent's bash tool.
async function entries(rt: Runtime): Promise<Record<string, Entry>> {
  const lease = rt.owners.host();
  const term = await rt.terminals.open(lease.token);
  const agent = rt.agents.create({ sessionId: 'policy-security', onTurn: () => {} });
  return {
    'shell.run': (command) => rt.shell.run({ command, owner: lease.token }),
    'shell.background': (command) => rt.shell.background(lease.token, { command }),
    'terminals.execute': (command) => rt.terminals.execute(lease.token, term.id, command),
    'bash tool': async (command) => {
      const r = await agent.tools.call('bash', { command });
      if (r.ok) return r;
      throw Object.assign(new Error(r.text), { code: (r as { code?: string }).code, toolText: r.text });
    },
  };
}

/**
 * Runs every shape through every entry and asserts: the witness survives, the answer is
 * POLICY_DENIED, and the rule's reason (or what the approver was shown) names `why`. First, as
 * a control, each shape runs with no policy and really removes its witness.
 */
export async function assertHeldOnEveryEntry(shapes: readonly Shape[]): Promise<void> {
  const control = await createRuntime({ spillDir: false });
  const dir = mkdtempSync(join(tmpdir(), 'tether-policy-ctl-'));
  try {
    for (const shape of shapes) {
      const witness = join(dir, 'witness');
      writeFileSync(witness, 'x');
      await control.shell.run({ command: shape.line(witness), cwd: dir, timeoutMs: 10_000 });
      expect(
        existsSync(witness),
        `control: \`${shape.line(witness)}\` removes its witness without a policy`,
      ).toBe(false);
    }
  } finally {
    await control.dispose();
    rmSync(dir, { recursive: true, force: true });
  }

  const h = await policyRuntime('allow');
  try {
    const via = await entries(h.rt);
    for (const shape of shapes) {
      for (const [entry, run] of Object.entries(via)) {
        const witness = join(h.dir, 'witness');
        writeFileSync(witness, 'x');
        const line = shape.line(witness);
        h.asked.length = 0;
        const err = await run(line).then(
          () => null,
          (e: unknown) => e,
        );
        const label = `${shape.name} through ${entry}: \`${line}\``;
        expect((err as { code?: string } | null)?.code, label).toBe('POLICY_DENIED');
        const said =
          err instanceof PolicyDeniedError && err.decidedBy === 'rule'
            ? err.reason
            : h.asked.length > 0
              ? `${h.asked.at(-1)!.reason}; ${h.asked.at(-1)!.undecidable.join('; ')}`
              : String((err as { toolText?: string }).toolText ?? (err as Error).message);
        expect(said, label).toMatch(shape.why);
        expect(existsSync(witness), `${label} left its witness`).toBe(true);
      }
    }
  } finally {
    await h.close();
  }
}
