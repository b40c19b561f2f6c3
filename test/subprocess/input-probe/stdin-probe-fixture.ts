import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as pty from 'node-pty';
import { readIdentity } from '../../../src/subprocess/identity.js';
import { probeStdinRead, type StdinProof } from '../../../src/subprocess/input-probe/stdin-probe.js';
import { newTreeId, TREE_MARKER_ENV } from '../../../src/subprocess/marker.js';
import { readProcStat } from '../../../src/subprocess/proc.js';
import { killProcessTree } from '../../../src/subprocess/tree-kill.js';
import type { ProcessIdentity } from '../../../src/subprocess/types.js';

/** A real pty running `bash --noprofile --norc -i`, tagged so the global afterEach sees it. */
export interface TestTerminal {
  readonly term: pty.IPty;
  readonly root: ProcessIdentity;
  readonly treeId: string;
  /** The slave side, e.g. /dev/pts/3. */
  readonly ttyPath: string;
  /** Everything the terminal printed so far. */
  output(): string;
  /** Types `line` and Enter. */
  run(line: string): void;
  probe(): StdinProof;
  /** The foreground group's leader now: its pid and command name. */
  foreground(): { pid: number; comm: string } | null;
}

const open: { t: TestTerminal; exited: Promise<void> }[] = [];
let scratch: string | undefined;

/** A private directory for fifos and scripts, removed by closeTerminals. */
export function scratchDir(): string {
  scratch ??= mkdtempSync(join(tmpdir(), 'tether-stdin-probe-'));
  return scratch;
}

// Opens a terminal and waits for bash's first prompt.
export async function openTerminal(): Promise<TestTerminal> {
  const treeId = newTreeId();
  const term = pty.spawn('bash', ['--noprofile', '--norc', '-i'], {
    name: 'xterm-256color',
    cols: 120,
    rows: 30,
    cwd: scratchDir(),
    env: { ...process.env, [TREE_MARKER_ENV]: treeId, PS1: 'PROMPT$ ', HISTFILE: '/dev/null', LESS: '' },
  });
  let text = '';
  term.onData((d) => {
    text += d;
  });
  const exited = new Promise<void>((resolve) => term.onExit(() => resolve()));
  const root = readIdentity(term.pid);
  if (root === null) throw new Error('the pty child vanished at once');
  const named = (term as unknown as { ptsName?: string }).ptsName;
  const ttyPath = named ?? readlinkSync(`/proc/${term.pid}/fd/0`);
  const t: TestTerminal = {
    term,
    root,
    treeId,
    ttyPath,
    output: () => text,
    run: (line) => term.write(`${line}\r`),
    probe: () => probeStdinRead({ root, ttyPath }),
    foreground: () => {
      const tpgid = readProcStat(root.pid)?.tpgid ?? -1;
      const leader = tpgid > 0 ? readProcStat(tpgid) : null;
      return leader === null ? null : { pid: leader.pid, comm: leader.comm };
    },
  };
  open.push({ t, exited });
  await waitUntil(() => text.includes('PROMPT$ '), 'the first prompt');
  return t;
}

/** Kills every terminal opened since the last call, whole tree, and waits for node-pty's exit. */
export async function closeTerminals(): Promise<void> {
  for (const { t, exited } of open.splice(0).reverse()) {
    await killProcessTree({ root: t.root, treeId: t.treeId }, { graceMs: 300 });
    t.term.kill('SIGKILL');
    await Promise.race([exited, sleep(2000)]);
  }
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
}

/** Re-checks `check` every 20 ms until it returns a non-null value; throws after `timeoutMs`. */
export async function waitUntil<T>(
  check: () => T | null | undefined | false,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== null && value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Waits (up to 5 s, every 20 ms) for a proof that satisfies `accept`, e.g. from a given program. */
export function provenBy(
  t: TestTerminal,
  accept: (p: StdinProof & { proven: true }, comm: string) => boolean,
  what: string,
): Promise<StdinProof & { proven: true }> {
  return waitUntil(() => {
    const p = t.probe();
    if (!p.proven) return null;
    const comm = readProcStat(p.pid)?.comm ?? '';
    return accept(p, comm) ? p : null;
  }, what);
}

/** Probes `count` times, `everyMs` apart, and returns every verdict. */
export async function probeMany(t: TestTerminal, count: number, everyMs = 2): Promise<StdinProof[]> {
  const out: StdinProof[] = [];
  for (let i = 0; i < count; i++) {
    out.push(t.probe());
    if (everyMs > 0) await sleep(everyMs);
  }
  return out;
}
