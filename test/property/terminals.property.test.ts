import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, TetherError } from '../../src/index.js';
import type { AgentOwnerToken } from '../../src/owners/owner-token.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';

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
const code = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
const pick = <T>(items: readonly T[], n: number) => (items.length ? items[n % items.length] : undefined);

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
    const res = await r.rt.terminals.send(r.owners[t.owner]!, t.id, 'read -p "? " answer\n', {
      settleMs: 2_000,
    });
    expect(['stdin_read', 'inferred_idle']).toContain(res.waitReason);
    const answered = await r.rt.terminals.send(r.owners[t.owner]!, t.id, 'yes\n', { settleMs: 2_000 });
    expect(['stdin_read', 'inferred_idle']).toContain(answered.waitReason);
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
  }
  toString = () => `close(#${this.n})`;
}

const commands = [
  fc.integer({ min: 0, max: OWNERS - 1 }).map((o) => new Open(o)),
  fc.nat().map((n) => new ExecuteStore(n)),
  fc.nat().map((n) => new ExecuteRead(n)),
  fc.nat().map((n) => new SendRead(n)),
  fc.nat().map((n) => new Interrupt(n)),
  fc.nat().map((n) => new CrossOwner(n)),
  fc.nat().map((n) => new Close(n)),
];

describe('terminal service (model-based)', () => {
  it('T1–T9, D2: random open/send/execute/read/signal/close by two owners ends quiescent', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 12 }), async (cmds) => {
        const rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
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
        expect(rt.terminals.stats()).toEqual({
          open: 0,
          busy: 0,
          hostAlive: false,
          listeners: 0,
          deliveries: 0,
        });
        expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
      }),
      { numRuns: NUM_RUNS },
    );
    console.log(`terminal property: ${ran} commands over ${NUM_RUNS} runs`);
    expect(ran).toBeGreaterThan(NUM_RUNS); // the runs did real work, not only skipped commands
  });
});
