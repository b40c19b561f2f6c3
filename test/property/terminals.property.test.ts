import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, TetherError } from '../../src/index.js';
import type { AgentOwnerToken } from '../../src/owners/owner-token.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { foregroundTaken } from '../support/proc-oracle.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';

// Model-based test of the terminal service (T1–T9) over random operation sequences by two
// owners, with real PTYs. After every run: every terminal closed, the PTY worker stopped, no
// tagged process alive. NUM_RUNS is modest for CI; raise it with TETHER_PROPERTY_RUNS.
const NUM_RUNS = Number(process.env.TETHER_PROPERTY_RUNS ?? 15);
const OWNERS = 2;

interface ModelTerminal {
  readonly id: string;
  readonly owner: number;
  /** The value execute last stored in the shell (T1), or null after a reset. */
  value: string | null;
}
interface Model {
  terminals: ModelTerminal[];
  counter: number;
}
interface Real {
  readonly rt: Runtime;
  readonly owners: AgentOwnerToken[];
}
type Cmd = fc.AsyncCommand<Model, Real>;

let ran = 0;
/** How often each hard state was reached over all runs (each must be, at least once). */
const reached = new Map<string, number>();
const reach = (what: string) => reached.set(what, (reached.get(what) ?? 0) + 1);
/** A send only a proof (or the session's end) can end: 10 minutes of silence budget. */
const PROOF_ONLY = { settleMs: 600_000, timeoutMs: 600_000 };
/** T3: characters each terminal retains in these runs (small, so floods make holes). */
const RETENTION = 2_048;
const code = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
const pick = <T>(items: readonly T[], n: number) => (items.length ? items[n % items.length] : undefined);

// The shell pid behind a terminal now (a reset replaces it).
async function shellPid(r: Real, t: ModelTerminal): Promise<number> {
  return (await r.rt.terminals.list(r.owners[t.owner]!)).find((i) => i.id === t.id)!.pid;
}

// A terminal for `owner` in place of one that ended, so later commands still have work to do.
async function reopen(m: Model, r: Real, owner: number): Promise<void> {
  const info = await r.rt.terminals.open(r.owners[owner]!);
  m.terminals.push({ id: info.id, owner, value: null });
}

class Open implements Cmd {
  constructor(readonly owner: number) {}
  check = (m: Readonly<Model>) => m.terminals.filter((t) => t.owner === this.owner).length < 2;
  async run(m: Model, r: Real) {
    ran++;
    const info = await r.rt.terminals.open(r.owners[this.owner]!);
    m.terminals.push({ id: info.id, owner: this.owner, value: null });
  }
  toString = () => `open(o${this.owner})`;
}

class ExecuteStore implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const value = `v${++m.counter}`;
    const res = await r.rt.terminals.execute(r.owners[t.owner]!, t.id, `V=${value}; echo "$V"`);
    expect(res).toEqual({ output: `${value}\n`, exitCode: 0, timedOut: false, shellReset: false });
    t.value = value;
  }
  toString = () => `execute(#${this.n})`;
}

class ExecuteRead implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const res = await r.rt.terminals.execute(
      r.owners[t.owner]!,
      t.id,
      'if [ -n "$V" ]; then echo "$V"; else echo none; fi',
    );
    expect(res.output).toBe(`${t.value ?? 'none'}\n`); // T1: state survives
  }
  toString = () => `executeRead(#${this.n})`;
}

class SendRead implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    // T6: only a proof can end these sends: the silence budget is 10 minutes.
    const res = await r.rt.terminals.send(r.owners[t.owner]!, t.id, 'read -p "? " answer\n', PROOF_ONLY);
    expect(res.waitReason).toBe('stdin_read');
    const answered = await r.rt.terminals.send(r.owners[t.owner]!, t.id, 'yes\n', PROOF_ONLY);
    expect(answered.waitReason).toBe('stdin_read'); // the shell reads its next line
    await r.rt.terminals.read(r.owners[t.owner]!, t.id, answered.cursor);
  }
  toString = () => `sendRead(#${this.n})`;
}

class Interrupt implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const owner = r.owners[t.owner]!;
    await r.rt.terminals.send(owner, t.id, 'sleep 1000\n', { settleMs: 100 });
    await foregroundTaken(await shellPid(r, t)); // SIGINT must find sleep, not the prompt
    await r.rt.terminals.signal(owner, t.id, 'SIGINT');
    const res = await r.rt.terminals.execute(owner, t.id, 'echo back');
    expect(res.output).toBe('back\n');
  }
  toString = () => `interrupt(#${this.n})`;
}

class CrossOwner implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const other = r.owners[(t.owner + 1) % OWNERS]!;
    expect(await r.rt.terminals.execute(other, t.id, 'echo x').catch(code)).toBe('TERMINAL_NOT_FOUND'); // T9
    expect((await r.rt.terminals.list(other)).map((i) => i.id)).not.toContain(t.id);
  }
  toString = () => `crossOwner(#${this.n})`;
}

class Close implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    await r.rt.terminals.execute(r.owners[t.owner]!, t.id, 'sleep 1000 & setsid sleep 1000 &');
    await r.rt.terminals.close(r.owners[t.owner]!, t.id);
    m.terminals = m.terminals.filter((x) => x !== t);
    const mine = await r.rt.terminals.list(r.owners[t.owner]!);
    expect(mine.map((i) => i.id)).toEqual(m.terminals.filter((x) => x.owner === t.owner).map((x) => x.id));
    await reopen(m, r, t.owner);
  }
  toString = () => `close(#${this.n})`;
}

// T2: a second send or an execute while a send is in flight is refused, not interleaved.
class ConcurrentSend implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const owner = r.owners[t.owner]!;
    const first = r.rt.terminals.send(owner, t.id, 'sleep 0.2; read -r x\n', PROOF_ONLY);
    expect(await r.rt.terminals.send(owner, t.id, 'echo no\n').catch(code)).toBe('TERMINAL_BUSY');
    expect(await r.rt.terminals.execute(owner, t.id, 'echo no').catch(code)).toBe('TERMINAL_BUSY');
    expect((await first).waitReason).toBe('stdin_read');
    expect((await r.rt.terminals.send(owner, t.id, 'y\n', PROOF_ONLY)).waitReason).toBe('stdin_read');
    reach('T2 busy');
  }
  toString = () => `concurrentSend(#${this.n})`;
}

// T3: more output than the retention: the send and a read from 0 say lossy; the tail is intact.
class Flood implements Cmd {
  constructor(
    readonly n: number,
    readonly unit: string,
  ) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const owner = r.owners[t.owner]!;
    const body = this.unit.repeat(Math.ceil((3 * RETENTION) / this.unit.length));
    const file = join(tmpdir(), `tether-flood-${process.pid}-${++m.counter}`);
    writeFileSync(file, body);
    try {
      const n = ++m.counter;
      const res = await r.rt.terminals.send(owner, t.id, `cat ${file}; echo END-$((${n}+0))\n`, PROOF_ONLY);
      expect(res.waitReason).toBe('stdin_read');
      // Under heavy load the proof can come before the output is all there (see the report of
      // issue 12): read on until the end marker, so T3 is checked on what the stream holds.
      let { output: text, lossy, cursor } = res;
      for (let i = 0; !text.includes(`END-${n}`); i++) {
        if (i > 6_000) throw new Error(`no END-${n} after the flood: ${text.slice(-200)}`);
        const more = await r.rt.terminals.read(owner, t.id, cursor);
        if (more.text === '') await new Promise((resolve) => setTimeout(resolve, 10));
        text += more.text;
        lossy ||= more.lossy;
        cursor = more.cursor;
      }
      expect(lossy).toBe(true);
      // What is kept after the hole is the stream itself: the body's last part, contiguous.
      expect(text).toContain(body.slice(-RETENTION / 4));
      const page = await r.rt.terminals.read(owner, t.id, 0);
      expect(page.lossy).toBe(true);
      expect(page.text.length).toBeLessThanOrEqual(RETENTION);
      reach('T3 lossy');
    } finally {
      rmSync(file, { force: true });
    }
  }
  toString = () => `flood(#${this.n}, ${JSON.stringify(this.unit)})`;
}

// T5: output that never stops and no read of stdin: only the total deadline ends the send.
class SendTimeout implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const owner = r.owners[t.owner]!;
    const res = await r.rt.terminals.send(owner, t.id, 'while :; do echo tick; sleep 0.05; done\n', {
      settleMs: 600_000,
      timeoutMs: 300,
    });
    expect(res.waitReason).toBe('timeout');
    await foregroundTaken(await shellPid(r, t)); // the loop's sleep, not the prompt, gets SIGINT
    await r.rt.terminals.signal(owner, t.id, 'SIGINT');
    expect((await r.rt.terminals.execute(owner, t.id, 'echo back')).output).toBe('back\n');
    reach('T5 timeout');
  }
  toString = () => `sendTimeout(#${this.n})`;
}

// T7: a command past its deadline is interrupted; the shell (and its state, T1) stays.
class ExecuteTimeout implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const res = await r.rt.terminals.execute(r.owners[t.owner]!, t.id, 'sleep 100', { timeoutMs: 300 });
    // bash's own newline after an interrupted foreground command is what the terminal showed
    expect(res).toEqual({ output: '\n', exitCode: 130, timedOut: true, shellReset: false });
    reach('T7 timedOut');
  }
  toString = () => `executeTimeout(#${this.n})`;
}

// T7: a command that ends the shell: it is replaced, its state is gone.
class ExecuteExit implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const res = await r.rt.terminals.execute(r.owners[t.owner]!, t.id, 'exit 3');
    expect(res).toEqual({ output: 'exit\n', exitCode: 3, timedOut: false, shellReset: true });
    t.value = null;
    reach('T7 shellReset');
  }
  toString = () => `executeExit(#${this.n})`;
}

// T5: a send that ends the session says so; the terminal is gone for its owner.
class SendExit implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => m.terminals.length > 0;
  async run(m: Model, r: Real) {
    ran++;
    const t = pick(m.terminals, this.n)!;
    const owner = r.owners[t.owner]!;
    expect((await r.rt.terminals.send(owner, t.id, 'exit\n', PROOF_ONLY)).waitReason).toBe('session_exit');
    await r.rt.terminals.close(owner, t.id); // returns once the ended terminal's tree is swept
    m.terminals = m.terminals.filter((x) => x !== t);
    expect((await r.rt.terminals.list(owner)).map((i) => i.id)).not.toContain(t.id);
    expect(await r.rt.terminals.execute(owner, t.id, 'true').catch(code)).toBe('TERMINAL_CLOSED');
    reach('T5 session_exit');
    await reopen(m, r, t.owner);
  }
  toString = () => `sendExit(#${this.n})`;
}

const printable = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 12 })
  // Full unicode, minus control characters (the terminal would act on them, not print them).
  .filter((u) => !/[\p{Cc}\p{Cs}]/u.test(u));

const commands = [
  fc.integer({ min: 0, max: OWNERS - 1 }).map((o) => new Open(o)),
  fc.nat().map((n) => new ExecuteStore(n)),
  fc.nat().map((n) => new ExecuteRead(n)),
  fc.nat().map((n) => new SendRead(n)),
  fc.nat().map((n) => new Interrupt(n)),
  fc.nat().map((n) => new CrossOwner(n)),
  fc.nat().map((n) => new Close(n)),
  fc.nat().map((n) => new ConcurrentSend(n)),
  fc.tuple(fc.nat(), printable).map(([n, u]) => new Flood(n, u)),
  fc.nat().map((n) => new SendTimeout(n)),
  fc.nat().map((n) => new ExecuteTimeout(n)),
  fc.nat().map((n) => new ExecuteExit(n)),
  fc.nat().map((n) => new SendExit(n)),
];

describe('terminal service (model-based)', () => {
  it('T1–T9, D2: random open/send/execute/read/signal/close by two owners ends quiescent', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 14, size: 'max' }), async (cmds) => {
        const rt = await createRuntime({
          limits: { cleanupGraceMs: 200, terminalRetentionChars: RETENTION },
        });
        const real: Real = { rt, owners: Array.from({ length: OWNERS }, () => rt.owners.host().token) };
        try {
          // Every run starts with one terminal per owner, so commands have something to act on.
          const terminals: ModelTerminal[] = [];
          for (let owner = 0; owner < OWNERS; owner++) {
            terminals.push({ id: (await rt.terminals.open(real.owners[owner]!)).id, owner, value: null });
          }
          await fc.asyncModelRun(() => ({ model: { terminals, counter: 0 }, real }), cmds);
        } finally {
          await rt.dispose();
        }
        expect(rt.terminals.stats()).toEqual(TERMINALS_QUIESCENT);
        expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
      }),
      { numRuns: NUM_RUNS },
    );
    console.log(`terminal property: ${ran} commands over ${NUM_RUNS} runs`);
    expect(ran).toBeGreaterThan(NUM_RUNS); // the runs did real work, not only skipped commands
    // Every hard state was reached at least once: a property that never gets there proves nothing.
    expect([...reached.keys()].sort()).toEqual(
      ['T2 busy', 'T3 lossy', 'T5 session_exit', 'T5 timeout', 'T7 shellReset', 'T7 timedOut'].sort(),
    );
  }, 600_000);
});
