import { type ChildProcess, type StdioOptions, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built CLI, as a user runs it (npm test builds before vitest). */
export const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

/** Runs `tether ...args` to its end. */
export const tether = (...args: string[]) =>
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

/** A running `tether` with what it printed so far and a promise of its exit status. */
export interface LiveTether {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** The exit status, or 128 + N when it was killed by signal N. */
  readonly exited: Promise<number | null>;
  /** Resolves `true` once stdout contains `text`, `false` if the process ended first. */
  printed(text: string): Promise<boolean>;
}

const running = new Set<LiveTether>();

/**
 * Ends every `tether` a failed test left running, with SIGTERM (so it kills its own tree
 * first), and waits for each. Use in `afterEach`.
 */
export async function endLeftovers(): Promise<void> {
  const left = [...running];
  for (const live of left) live.child.kill('SIGTERM');
  await Promise.all(left.map((live) => live.exited));
}

/** Starts `tether ...args` with stdin closed and stdout/stderr as pipes (unless `stdio` says otherwise). */
export function startTether(
  args: readonly string[],
  stdio: StdioOptions = ['ignore', 'pipe', 'pipe'],
): LiveTether {
  const child = spawn(process.execPath, [cli, ...args], { stdio });
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of waiters) waiter();
  };
  child.stdout?.setEncoding('utf8').on('data', (s: string) => {
    out += s;
    wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    err += s;
  });
  let ended = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('close', (code) => {
      ended = true;
      running.delete(live);
      wake();
      resolve(code);
    });
  });
  const printed = (text: string) =>
    new Promise<boolean>((resolve) => {
      const check = () => {
        if (!out.includes(text) && !ended) return;
        waiters.delete(check);
        resolve(out.includes(text));
      };
      waiters.add(check);
      check();
    });
  const live: LiveTether = { child, stdout: () => out, stderr: () => err, exited, printed };
  running.add(live);
  return live;
}
