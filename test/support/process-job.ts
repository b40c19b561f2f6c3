import type { JobSpec } from '../../src/jobs/job-types.js';
import { isSameLiveProcess } from '../../src/subprocess/identity.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import type { SubprocessHandle, SubprocessProvider } from '../../src/subprocess/types.js';

export interface ProcessJobOptions {
  readonly label?: string;
  readonly outputCap?: number;
  /** Give the process a stdin pipe (see `ProcessJob.write`). */
  readonly stdin?: boolean;
  /** Make `done` reject when the process exits with this code (a J1 contract breach on purpose). */
  readonly rejectOnExit?: number;
  readonly provider?: SubprocessProvider;
}

/** A test producer: a real `/bin/sh -c` process tree, and handles to poke it. */
export interface ProcessJob {
  readonly spec: JobSpec;
  /** The spawned tree, once `run()` was called. */
  readonly handle: Promise<SubprocessHandle>;
  /** Writes a line to the process's stdin (needs `stdin: true`); `false` if it is gone (EPIPE). */
  write(line: string): Promise<boolean>;
  /** How many times the registry called `cancel`. */
  readonly cancels: number;
}

const sharedProvider = createLocalProvider();
/** As in `src/shell/shell-job.ts`. */
const INTERRUPT_GRACE_MS = 200;

// The shape the lead's shell producer has: stream decoded output into ctx.append, cancel =
// interrupt the group then tree-kill (J7), done = exit + tree verified gone + streams drained.
export function processJob(command: string, options: ProcessJobOptions = {}): ProcessJob {
  const provider = options.provider ?? sharedProvider;
  let resolveHandle!: (h: SubprocessHandle) => void;
  const handle = new Promise<SubprocessHandle>((resolve) => {
    resolveHandle = resolve;
  });
  let cancels = 0;
  const spec: JobSpec = {
    kind: 'test-process',
    label: options.label ?? command,
    ...(options.outputCap === undefined ? {} : { outputCap: options.outputCap }),
    run: async (ctx) => {
      const child = await provider.spawn({
        argv: ['/bin/sh', '-c', command],
        cwd: '/',
        stdio: { stdin: options.stdin ? 'pipe' : 'ignore', stdout: 'pipe', stderr: 'pipe' },
        cleanupGraceMs: 300,
      });
      // EPIPE on a stdin whose reader died is a fact of the race, not a crash.
      child.stdin?.on('error', () => {});
      resolveHandle(child);
      const drained = Promise.all([child.stdout, child.stderr].map((s) => streamClosed(s, ctx.append)));
      let exited = false;
      let grace: NodeJS.Timeout | undefined;
      let killing: ReturnType<SubprocessHandle['kill']> | undefined;
      const kill = () => {
        killing ??= child.kill();
        return killing;
      };
      const done = (async () => {
        const exit = await child.exited;
        exited = true;
        clearTimeout(grace);
        const verdict = await kill();
        await drained;
        if (exit.exitCode !== null && exit.exitCode === options.rejectOnExit)
          throw new Error('producer exploded');
        if (verdict.status !== 'quiescent')
          return { ...exit, error: `tree escaped: ${verdict.escaped.join(',')}` };
        return exit;
      })();
      return {
        cancel: () => {
          cancels++;
          // J7 as the shell producer does it: interrupt the foreground group and give it a
          // moment to exit on its own (its INT traps run), then the verified tree kill. A TERM
          // sent together with the SIGINT could beat the trap.
          if (!exited && isSameLiveProcess(child.identity)) {
            try {
              process.kill(-child.identity.pid, 'SIGINT');
            } catch {}
            grace ??= setTimeout(() => void kill(), INTERRUPT_GRACE_MS);
            return;
          }
          void kill();
        },
        done,
      };
    },
  };
  return {
    spec,
    handle,
    get cancels() {
      return cancels;
    },
    async write(line) {
      const child = await handle;
      return new Promise<boolean>((resolve) => child.stdin!.write(`${line}\n`, (err) => resolve(!err)));
    },
  };
}

// Streams decoded text into `sink` and resolves when the stream closed.
function streamClosed(stream: NodeJS.ReadableStream | null, sink: (text: string) => void): Promise<void> {
  if (stream === null) return Promise.resolve();
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => sink(text));
  return new Promise((resolve) => {
    stream.once('close', () => resolve());
    stream.once('end', () => resolve());
  });
}
