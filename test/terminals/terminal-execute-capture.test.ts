import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import type { SubprocessProvider } from '../../src/subprocess/types.js';
import { localTerminalsWith } from '../support/local-terminals.js';

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

const CAP = 1_048_576; // execute keeps this many characters of a command's output

// The local terminals without `watchMarked`: execute then scans the batches on the main thread.
const providerWithoutWatch = (): SubprocessProvider => localTerminalsWith('no-watch');

const seqLines = (n: number): string => `${Array.from({ length: n }, (_, i) => i + 1).join('\n')}\n`;

// A runtime on `provider` (the default one when undefined) and a terminal of a host owner in it.
async function openTerminalOn(provider: SubprocessProvider | undefined) {
  const runtime = await createRuntime({
    ...(provider ? { provider } : {}),
    spillDir: false,
    limits: { cleanupGraceMs: 300 },
  });
  rt = runtime; // disposed by afterEach
  const owner = runtime.owners.host().token;
  return { runtime, owner, t: await runtime.terminals.open(owner) };
}

describe.each([
  ['in the PTY worker', () => undefined],
  ['on the main thread (a provider without watchMarked)', providerWithoutWatch],
])('execute capture %s', (_where, provider) => {
  it('T7: output under the cap is returned exactly; output over it is its exact last 1,048,576 characters and the count of the rest', async () => {
    const { runtime, owner, t } = await openTerminalOn(provider());

    const small = await runtime.terminals.execute(
      owner,
      t.id,
      'seq 1 20000; printf "no newline \\xf0\\x9f\\x98\\x80"',
    );
    expect(small).toMatchObject({ exitCode: 0, timedOut: false, shellReset: false });
    expect(small.output).toBe(`${seqLines(20_000)}no newline 😀`);

    // ~1.9 MB through the tty (\n becomes \r\n there): many batches, markers split anywhere.
    const big = await runtime.terminals.execute(
      owner,
      t.id,
      'seq 1 250000; exit_with() { return $1; }; exit_with 3',
    );
    expect(big.exitCode).toBe(3);
    const note = /^\[tether: (\d+) earlier characters omitted\]\n/.exec(big.output);
    expect(note).not.toBeNull();
    const omitted = Number(note![1]);
    const raw = seqLines(250_000).replace(/\n/g, '\r\n');
    expect(raw.length - omitted).toBe(CAP);
    expect(big.output.slice(note![0].length)).toBe(raw.slice(omitted).replace(/\r\n/g, '\n'));

    // The shell is still usable, and what it prints next is not mixed with the flood.
    expect(await runtime.terminals.execute(owner, t.id, 'echo after')).toMatchObject({
      output: 'after\n',
      exitCode: 0,
    });
  });

  it('T7: a timed-out command returns what it printed so far (released from the capture) and the shell comes back', async () => {
    const { runtime, owner, t } = await openTerminalOn(provider());
    // INT ignored by the shell and its sleep: Ctrl-C does not bring the prompt back, so the shell is replaced.
    const r = await runtime.terminals.execute(owner, t.id, "echo started; trap '' INT; sleep 30", {
      timeoutMs: 500,
    });
    expect(r).toMatchObject({ timedOut: true, shellReset: true, exitCode: null });
    expect(r.output).toBe('started\n');
    expect(await runtime.terminals.execute(owner, t.id, 'echo fresh')).toMatchObject({
      output: 'fresh\n',
      exitCode: 0,
    });
  });
});
