import { spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { TetherError } from '../errors.js';
import { bootstrapHelper, helperArgv } from './helper-bootstrap.js';
import type { HelperLink } from './helper-link.js';

/** What {@link openExecLink} runs. */
export interface ExecLinkOptions {
  /** A command prefix that runs its remaining words on the host: `podman exec -i c1`. */
  readonly argv: readonly [string, ...string[]];
  /** Where it runs, for messages. */
  readonly at: string;
  /** The helper directory on the host (`~` is expanded there). */
  readonly helperDir: string;
  /** Bound on start, upload and greeting together. */
  readonly connectTimeoutMs: number;
}

/**
 * Runs `argv` with the helper's bootstrap words appended (`… python3 -c <bootstrap> DIR HASH LEN`),
 * uploads the helper over its stdin when this version is not on the host yet, and returns the
 * greeted link (X5). The process's stdin and stdout are the link; its exit is a dropped link (a
 * killed `podman exec` included). A command that cannot start, ends early or stays silent past
 * `connectTimeoutMs` is PROVIDER_UNAVAILABLE with its own stderr; it is killed then.
 *
 * @example
 * ```ts
 * const link = await openExecLink({ argv: ['podman', 'exec', '-i', 'c1'], at: 'podman:c1',
 *   helperDir: '~/.cache/tether', connectTimeoutMs: 10_000 });
 * ```
 */
export async function openExecLink(options: ExecLinkOptions): Promise<HelperLink> {
  const { argv, at } = options;
  const [program, ...prefix] = argv;
  const child = spawn(program, [...prefix, ...helperArgv(options.helperDir)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  let ended: string | null = null;
  const downListeners: Array<(why: string) => void> = [];
  const down = (why: string) => {
    ended ??= why;
    for (const listener of downListeners) listener(why);
  };
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      stderr += `cannot run ${program}: ${err.message}`;
      down(`${program} could not run (${err.message})`);
      resolve(127);
    });
    child.once('exit', (code, signal) => {
      const last = stderr.trim().split('\n').pop();
      down(`${program} exited (${signal ?? `code ${code}`})${last ? `: ${last}` : ''}`);
      resolve(code);
    });
  });
  // A write to a process that is gone is EPIPE: the link is down, the channel says so.
  child.stdin.on('error', () => {});
  const stream = Duplex.from({ readable: child.stdout, writable: child.stdin });
  // Its end shows as the process's exit (onDown); `Premature close` and EPIPE say nothing more.
  stream.on('error', () => {});
  const destroy = () => {
    child.stdin.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const bound = new AbortController();
  try {
    const boot = bootstrapHelper({ stream, at, stderr: () => stderr, exited });
    boot.catch(() => {}); // after a timeout its rejection is the killed process: already reported
    const leftover = await Promise.race([
      boot,
      sleep(options.connectTimeoutMs, null, { signal: bound.signal }),
    ]);
    if (leftover === null) {
      throw new TetherError(
        'PROVIDER_UNAVAILABLE',
        `the helper on ${at} did not greet within ${options.connectTimeoutMs} ms (${argv.join(' ')}): ${stderr.trim() || 'no message'}`,
      );
    }
    return {
      kind: 'exec link',
      stream,
      leftover,
      stderr: () => stderr,
      destroy,
      onDown: (listener) => {
        downListeners.push(listener);
        if (ended !== null) listener(ended);
      },
    };
  } catch (err) {
    destroy();
    throw err;
  } finally {
    bound.abort();
  }
}
