import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What a crash child started, as it reports it on its first stdout line. */
export interface CrashChildReport {
  readonly pid: number;
  readonly spillPath: string | null;
}

/** A runtime in a child Node process (K3): the parent SIGKILLs it, or ends it with stdin. */
export interface CrashChild {
  readonly process: ChildProcess;
  readonly report: CrashChildReport;
  readonly exited: Promise<void>;
}

const DIST = new URL('../../dist/src/index.js', import.meta.url).href;

/**
 * Starts a runtime in a child process with the given state dir and containment, runs `jobs`
 * as background jobs, opens a terminal that runs `terminal` (when given), spills one large
 * output, prints its report and waits — until stdin closes, then it disposes and exits.
 */
export async function startCrashChild(opts: {
  readonly stateDir: string;
  readonly spillDir: string;
  readonly containment: 'cgroup' | 'marker';
  readonly jobs: readonly { readonly command: string; readonly env?: Record<string, string> }[];
  readonly terminal?: string;
  /** Added to the child's env (e.g. a TMPDIR of its own). */
  readonly env?: Readonly<Record<string, string>>;
}): Promise<CrashChild> {
  // CommonJS eval (an async IIFE): --input-type would be inherited by the PTY worker thread.
  const script = `(async () => {
    const { createRuntime } = await import(${JSON.stringify(DIST)});
    const opts = JSON.parse(process.env.CRASH_CHILD);
    const rt = await createRuntime({ stateDir: opts.stateDir, spillDir: opts.spillDir,
      containment: opts.containment, limits: { outputCapChars: 200, cleanupGraceMs: 300 } });
    const owner = rt.owners.host().token;
    for (const job of opts.jobs) await rt.shell.background(owner, job);
    if (opts.terminal) {
      const term = await rt.terminals.open(owner, {});
      await rt.terminals.send(owner, term.id, opts.terminal + '\\r', { timeoutMs: 300 });
    }
    const big = await rt.shell.run({ command: 'head -c 100000 /dev/zero | tr "\\\\0" x' });
    console.log(JSON.stringify({ pid: process.pid, spillPath: big.spillPath ?? null }));
    process.stdin.resume();
    process.stdin.on('end', async () => { await rt.dispose(); process.exit(0); });
  })()`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, ...opts.env, CRASH_CHILD: JSON.stringify(opts) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the crash child exited (${code}) before it reported`)));
  });
  return { process: child, report: JSON.parse(line) as CrashChildReport, exited };
}
