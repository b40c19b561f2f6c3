import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import { policyRuntime } from './policy-entries.js';

let h: Awaited<ReturnType<typeof policyRuntime>> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const code = (work: Promise<unknown>) =>
  work.then(
    () => null,
    (e: { code?: string }) => e.code,
  );

describe('policy: hidden terminals (A6)', () => {
  it('A6: terminals.open({ hidden: true }) is decided as its shell, and every execute in it is judged', async () => {
    h = await policyRuntime('allow');
    const { rt, dir } = h;
    const lease = rt.owners.host();
    const witness = join(dir, 'witness');
    writeFileSync(witness, 'x');
    const term = await rt.terminals.open(lease.token, { hidden: true });
    for (const line of [`rm ${witness}`, `setsid -w rm ${witness}`, `trap 'rm ${witness}' EXIT; exit`]) {
      expect(await code(rt.terminals.execute(lease.token, term.id, line)), line).toBe('POLICY_DENIED');
    }
    expect((await rt.terminals.execute(lease.token, term.id, 'echo still-here')).output).toBe('still-here\n');
    expect(await code(rt.terminals.send(lease.token, term.id, `rm ${witness}\n`))).toBe('POLICY_DENIED');
    expect(existsSync(witness)).toBe(true);
    await h.close();

    h = await policyRuntime('deny');
    const other = h.rt.owners.host();
    expect(await code(h.rt.terminals.open(other.token, { hidden: true }))).toBe('POLICY_DENIED');
    expect(h.rt.stats().terminals.open).toBe(0);
  }, 60_000);

  it('A6: the persistent bash asks once per command: its hidden shell opens and runs on that decision', async () => {
    h = await policyRuntime('ask', () => 'allow');
    const { rt, dir, asked } = h;
    const lease = rt.owners.host();
    const first = await rt.persistentBash.run(lease.token, 'echo hi', { cwd: '.' });
    expect([first.output, first.fresh]).toEqual(['hi\n', true]);
    expect((await rt.persistentBash.run(lease.token, 'echo again')).output).toBe('again\n');
    // One ask per command: not for the hidden shell's open, its `cd`, or its execute.
    expect(asked.map((r) => [r.action, r.command])).toEqual([
      ['persistent-bash', 'echo hi'],
      ['persistent-bash', 'echo again'],
    ]);

    const witness = join(dir, 'witness');
    writeFileSync(witness, 'x');
    const tools = createToolRegistry(rt, { persistentBash: true });
    for (const command of [
      `rm ${witness}`,
      `a=1; [[ -v 'a[$(rm ${witness})]' ]]`,
      `setsid -w rm ${witness}`,
    ]) {
      const r = await tools.call(lease.token, 'bash', { command });
      expect(r.ok, r.text).toBe(false);
      expect((r as { code?: string }).code, command).toBe('POLICY_DENIED');
    }
    expect(existsSync(witness)).toBe(true);
  }, 60_000);
});
