import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type OwnerLease, type Runtime, TetherError } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { foregroundTaken } from '../support/proc-oracle.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';

let rt: Runtime;
let lease: OwnerLease;
let owner: OwnerLease['token'];

beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 300, terminalRetentionChars: 20_000 } });
  lease = rt.owners.host();
  owner = lease.token;
});

afterEach(async () => {
  await rt.dispose();
});

const codeOf = (err: unknown) => (err instanceof TetherError ? err.code : String(err));

// Sends input and, while the program has not shown `expected` yet, keeps reading (loaded machines are slow).
/** A send only a proof (or the session's end) can end: 10 minutes of silence budget (T6). */
const PROOF_ONLY = { settleMs: 600_000, timeoutMs: 600_000 };

async function sendUntil(id: string, input: string, expected: RegExp) {
  let result = await rt.terminals.send(owner, id, input, { settleMs: 2_000 });
  let seen = result.output;
  while (!expected.test(seen) && result.waitReason !== 'session_exit') {
    result = await rt.terminals.send(owner, id, '', { settleMs: 500 });
    seen += result.output;
  }
  return { ...result, seen };
}

describe('rt.terminals', () => {
  it('T1: shell variables, cwd and functions survive across calls', async () => {
    const t = await rt.terminals.open(owner, { cwd: '/' });
    await rt.terminals.execute(owner, t.id, 'cd /tmp && export X=42 && f() { echo "f:$1"; }');
    const r = await rt.terminals.execute(owner, t.id, 'echo "$X"; pwd; f ok');
    expect(r).toEqual({ output: '42\n/tmp\nf:ok\n', exitCode: 0, timedOut: false, shellReset: false });
  });

  it('T7: execute returns only what the command printed, its exit code, and keeps ! literal', async () => {
    const t = await rt.terminals.open(owner);
    const r = await rt.terminals.execute(
      owner,
      t.id,
      'echo "a!b" \'c"d\'; printf "x\\ny"; ls /no-such-dir; (exit 7)',
    );
    expect(r.exitCode).toBe(7);
    expect(r.output).toBe("a!b c\"d\nx\nyls: cannot access '/no-such-dir': No such file or directory\n");
    const multi = await rt.terminals.execute(owner, t.id, 'cat <<EOF\nline1\nline2\nEOF');
    expect(multi.output).toBe('line1\nline2\n');
  });

  it('T7: a timeout interrupts the command and the shell stays', async () => {
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, t.id, 'Y=kept');
    const r = await rt.terminals.execute(owner, t.id, 'echo before; sleep 1000', { timeoutMs: 500 });
    expect(r).toMatchObject({ timedOut: true, shellReset: false, exitCode: 130 });
    expect(r.output).toContain('before');
    expect((await rt.terminals.execute(owner, t.id, 'echo $Y')).output).toBe('kept\n');
  });

  it('T7: aborting execute interrupts the command and rejects ABORTED; an aborted signal runs nothing', async () => {
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(owner, t.id, 'Y=kept');
    const cancel = new AbortController();
    const running = rt.terminals.execute(owner, t.id, 'sleep 1000', { signal: cancel.signal });
    setTimeout(() => cancel.abort(), 300);
    expect(codeOf(await running.catch((err: unknown) => err))).toBe('ABORTED');
    expect((await rt.terminals.execute(owner, t.id, 'echo $Y')).output).toBe('kept\n');
    const marker = join(tmpdir(), `tether-aborted-${process.pid}`);
    const never = rt.terminals.execute(owner, t.id, `touch ${marker}`, { signal: AbortSignal.abort() });
    expect(codeOf(await never.catch((err: unknown) => err))).toBe('ABORTED');
    await rt.terminals.execute(owner, t.id, 'true');
    expect(existsSync(marker)).toBe(false);
  });

  it('T7: a shell that exits (exit, set -e) is restarted and says shellReset', async () => {
    const t = await rt.terminals.open(owner);
    const r = await rt.terminals.execute(owner, t.id, 'set -euo pipefail; false; echo unreachable');
    expect(r).toMatchObject({ exitCode: 1, shellReset: true, timedOut: false });
    expect(r.output).not.toContain('unreachable');
    const after = await rt.terminals.execute(owner, t.id, 'echo alive');
    expect(after).toEqual({ output: 'alive\n', exitCode: 0, timedOut: false, shellReset: false });
  });

  it('T2: a send racing another send fails with TERMINAL_BUSY', async () => {
    const t = await rt.terminals.open(owner);
    const first = rt.terminals.send(owner, t.id, 'sleep 0.5\n', { settleMs: 2_000 });
    const second = await rt.terminals.send(owner, t.id, 'echo no\n').catch(codeOf);
    const third = await rt.terminals.execute(owner, t.id, 'echo no').catch(codeOf);
    expect(second).toBe('TERMINAL_BUSY');
    expect(third).toBe('TERMINAL_BUSY');
    await first;
  });

  it.each([
    ['read x', 'read -p "name? " x\n', /name\? /],
    ['cat', 'cat\n', /cat\r?\n/],
    ["python3 -c 'input()'", 'python3 -c \'input("py? ")\'\n', /py\? /],
    ['a Node program reading stdin', 'node -e "process.stdin.on(\'data\', () => {})"\n', /node -e/],
  ])('T6: %s waiting on the terminal gives stdin_read', async (_name, input, shown) => {
    const t = await rt.terminals.open(owner);
    // Only the proof can end this send (10 minutes of silence budget): however slowly the
    // program starts on a loaded machine, the answer is stdin_read or the test times out.
    const r = await rt.terminals.send(owner, t.id, input, PROOF_ONLY);
    expect(r.waitReason).toBe('stdin_read');
    // The program's prompt was written before it waited; on a loaded machine it may land just
    // after the proof (the PTY worker batches), and then it is the next read's (T5), never lost.
    let shownText = r.output;
    for (let i = 0, cursor = r.cursor; i < 200 && !shown.test(shownText); i++) {
      await sleep(10);
      const chunk = await rt.terminals.read(owner, t.id, cursor);
      shownText += chunk.text;
      cursor = chunk.cursor;
    }
    expect(shownText).toMatch(shown);
  });

  it.each([
    ['sleep 2', 'sleep 2\n'],
    ['a busy loop', 'while :; do :; done\n'],
    ['a silent computation', "python3 -c 'sum(range(10**9))'\n"],
  ])('T6: %s gives no false stdin_read proof', async (_name, input) => {
    const t = await rt.terminals.open(owner);
    const r = await rt.terminals.send(owner, t.id, input, { settleMs: 300 });
    expect(r.waitReason).toBe('inferred_idle');
    await rt.terminals.signal(owner, t.id, 'SIGINT');
  });

  it('T5: a wait that existed before the send is not evidence; silence counts from the write', async () => {
    const t = await rt.terminals.open(owner);
    await sendUntil(t.id, '', /\$ /);
    // Empty input consumes nothing: the shell's prompt wait predates it.
    const r = await rt.terminals.send(owner, t.id, '', { settleMs: 300 });
    expect(r.waitReason).toBe('inferred_idle');
    const answered = await rt.terminals.send(owner, t.id, 'echo hi\n', PROOF_ONLY);
    expect(answered.waitReason).toBe('stdin_read');
    expect(answered.output).toContain('hi');
  });

  it('T5: the total deadline gives timeout', async () => {
    const t = await rt.terminals.open(owner);
    const r = await rt.terminals.send(owner, t.id, 'while :; do echo tick; sleep 0.05; done\n', {
      settleMs: 600_000,
      timeoutMs: 400,
    });
    expect(r.waitReason).toBe('timeout');
    await rt.terminals.signal(owner, t.id, 'SIGINT');
  });

  it('T5: a session that ends gives session_exit and the terminal closes', async () => {
    const t = await rt.terminals.open(owner);
    const r = await rt.terminals.send(owner, t.id, 'exit 3\n', { settleMs: 5_000 });
    expect(r.waitReason).toBe('session_exit');
    for (let i = 0; i < 100 && (await rt.terminals.list(owner)).length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await rt.terminals.list(owner)).toEqual([]);
  });

  it('T3: huge output is retained up to the cap and the read says lossy', async () => {
    const t = await rt.terminals.open(owner);
    const before = await rt.terminals.send(owner, t.id, '', { settleMs: 100 });
    await rt.terminals.execute(owner, t.id, 'true');
    // Ends when the shell is proven back at its prompt, not after a silence a loaded machine could fake.
    const r = await rt.terminals.send(owner, t.id, 'seq 1 50000; echo END\n', PROOF_ONLY);
    expect(r.waitReason).toBe('stdin_read');
    expect(r.lossy).toBe(true);
    expect(r.output.length).toBeLessThanOrEqual(20_000);
    expect(r.output).toContain('END');
    const chunk = await rt.terminals.read(owner, t.id, before.cursor);
    expect(chunk.lossy).toBe(true);
  });

  it('T8: SIGINT interrupts the foreground program and the shell survives', async () => {
    const t = await rt.terminals.open(owner);
    await rt.terminals.send(owner, t.id, 'sleep 1000\n', { settleMs: 300 });
    await foregroundTaken(t.pid); // the signal must find sleep, not the shell at its prompt
    await rt.terminals.signal(owner, t.id, 'SIGINT');
    const r = await rt.terminals.execute(owner, t.id, 'echo $?; echo still-here');
    expect(r.output).toBe('130\nstill-here\n');
  });

  it('T6: a full-screen program waiting for a key (less) is proven to wait on the terminal', async () => {
    const file = join(tmpdir(), `tether-less-${process.pid}.txt`);
    writeFileSync(file, Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n'));
    const t = await rt.terminals.open(owner);
    const shown = await rt.terminals.send(owner, t.id, `less ${file}\n`, PROOF_ONLY);
    expect(shown.waitReason).toBe('stdin_read');
    expect(shown.output).toContain('line 0');
    const quit = await rt.terminals.send(owner, t.id, 'q', PROOF_ONLY);
    expect(quit.waitReason).toBe('stdin_read');
  });

  it('T3: screen renders what a person sees: overwrites resolved, no escape sequences, full-screen programs', async () => {
    const t = await rt.terminals.open(owner, { cols: 80, rows: 24 });
    await rt.terminals.execute(owner, t.id, 'printf "abc\\rX\\n"; printf "\\033[31mred\\033[0m\\n"');
    const plain = await rt.terminals.screen(owner, t.id);
    expect(plain.text).toContain('Xbc\nred');
    expect(plain.text).not.toContain('\x1b');
    expect(plain).toMatchObject({ cols: 80, rows: 24 });
    const file = join(tmpdir(), `tether-screen-${process.pid}.txt`);
    writeFileSync(file, Array.from({ length: 200 }, (_, i) => `row ${i}`).join('\n'));
    await sendUntil(t.id, `less ${file}\n`, /row 0/);
    const paged = await rt.terminals.screen(owner, t.id);
    expect(paged.text.split('\n')[0]).toBe('row 0');
    expect(paged.text).toContain('row 22');
    expect(paged.text).not.toContain('row 30');
    await rt.terminals.send(owner, t.id, 'q');
  });

  it('T4: close leaves nothing alive: background, nohup, setsid and SIGHUP-ignoring children', async () => {
    const t = await rt.terminals.open(owner);
    await rt.terminals.execute(
      owner,
      t.id,
      'sleep 1000 & nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 &',
    );
    await rt.terminals.execute(owner, t.id, '(trap "" HUP TERM; exec sleep 1000) & disown');
    // The shell forks asynchronously: wait until all five children exist before closing.
    for (let i = 0; i < 200 && listTaggedProcesses(treeIdPrefix()).length < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(listTaggedProcesses(treeIdPrefix()).length).toBeGreaterThanOrEqual(5);
    await rt.terminals.close(owner, t.id);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
    expect(await rt.terminals.list(owner)).toEqual([]);
  });

  it('T9: ids are unguessable and another owner sees nothing', async () => {
    const t = await rt.terminals.open(owner);
    expect(t.id).toMatch(/^term_[\w-]{16,}$/);
    const other = rt.owners.host().token;
    expect(await rt.terminals.list(other)).toEqual([]);
    for (const call of [
      () => rt.terminals.send(other, t.id, 'echo x\n'),
      () => rt.terminals.execute(other, t.id, 'echo x'),
      () => rt.terminals.read(other, t.id, 0),
      () => rt.terminals.signal(other, t.id, 'SIGINT'),
      () => rt.terminals.close(other, t.id),
    ]) {
      expect(await call().catch(codeOf)).toBe('TERMINAL_NOT_FOUND');
    }
    expect((await rt.terminals.list(owner)).map((i) => i.id)).toEqual([t.id]);
  });

  it('O2: a retired owner cannot open or send, but its terminals can still be drained', async () => {
    const t = await rt.terminals.open(owner);
    lease.retire();
    expect(await rt.terminals.open(owner).catch(codeOf)).toBe('OWNER_RETIRED');
    expect(await rt.terminals.send(owner, t.id, 'x').catch(codeOf)).toBe('OWNER_RETIRED');
    await rt.terminals.drainOwner(owner);
    expect(rt.terminals.stats().open).toBe(0);
  });

  it('bad input gets INVALID_ARGUMENT or a specific code with a message', async () => {
    const t = await rt.terminals.open(owner);
    expect(await rt.terminals.open(owner, { cwd: '/no/such' }).catch(codeOf)).toBe('CWD_NOT_FOUND');
    expect(await rt.terminals.open(owner, { cols: 0 }).catch(codeOf)).toBe('INVALID_ARGUMENT');
    expect(await rt.terminals.send(owner, t.id, 'x', { settleMs: -1 }).catch(codeOf)).toBe(
      'INVALID_ARGUMENT',
    );
    expect(await rt.terminals.read(owner, t.id, -1).catch(codeOf)).toBe('INVALID_ARGUMENT');
    expect(await rt.terminals.signal(owner, t.id, 'SIGSEGV' as never).catch(codeOf)).toBe('INVALID_ARGUMENT');
    expect(await rt.terminals.send(owner, 'term_nope', 'x').catch(codeOf)).toBe('TERMINAL_NOT_FOUND');
  });

  it('a per-owner cap on open terminals fails with TERMINAL_LIMIT', async () => {
    const small = await createRuntime({ limits: { maxTerminalsPerOwner: 2 } });
    try {
      const me = small.owners.host().token;
      await small.terminals.open(me);
      await small.terminals.open(me);
      expect(await small.terminals.open(me).catch(codeOf)).toBe('TERMINAL_LIMIT');
    } finally {
      await small.dispose();
    }
  });

  it('D2: dispose closes every terminal, stops the PTY worker and leaves nothing alive', async () => {
    const t = await rt.terminals.open(owner);
    await rt.terminals.send(owner, t.id, 'trap "" HUP; sleep 1000\n', { settleMs: 200 });
    await foregroundTaken(t.pid); // the HUP-ignoring sleep really runs when dispose comes
    await rt.dispose();
    expect(rt.terminals.stats()).toEqual(TERMINALS_QUIESCENT);
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });
});
