import { constants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRuntime } from '../runtime.js';
import type { ShellRequest, ShellResult } from '../shell/shell-types.js';
import { parseCommandArgs } from './cli-args.js';
import { sandboxFlag } from './sandbox-flag.js';
import { RUN_USAGE, UsageError } from './usage.js';
import { versionLine } from './version.js';

const OPTIONS = {
  timeout: { type: 'string', example: '5000' },
  cwd: { type: 'string', example: '/tmp' },
  shell: { type: 'string', example: '/bin/sh' },
  sandbox: { type: 'string', example: 'workspace-write' },
  quiet: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

// How long a result whose exit is unknown waits for the stop signal that may have caused it.
const STOP_SIGNAL_WAIT_MS = 200;

// Signals that end `tether run` after the command's tree is killed (exit 128 + N, as a shell does).
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * `tether run [options] [--] <command...>`: a transparent runner. The command's stdout and
 * stderr are this process's own (`stdio: 'inherit'` through `rt.shell.run`, so whatever
 * applies to a Tether command applies here), its exit code is ours, and Tether's facts are one
 * line on stderr (`--quiet` drops it). `--json` captures instead and prints the result.
 *
 * @example
 * ```ts
 * process.exitCode = await runCommand(['--timeout', '5000', '--', 'make test']);
 * ```
 */
export async function runCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('run', args, OPTIONS, 'rest');
  if (values.help) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  if (values.version) {
    process.stdout.write(versionLine());
    return 0;
  }
  if (positionals.length === 0) {
    throw new UsageError("needs a command, e.g. tether run -- 'echo hello'", 'run');
  }
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new UsageError(
      `--timeout takes a positive number of milliseconds, e.g. --timeout 5000; got '${values.timeout}'`,
      'run',
    );
  }

  const rt = await createRuntime({ ...sandboxFlag(values.sandbox, 'run') });
  const stop = new AbortController();
  let stoppedBy: (typeof STOP_SIGNALS)[number] | null = null;
  // `on`, not `once`: a second Ctrl-C while the tree is being killed must not kill us first.
  const handlers = STOP_SIGNALS.map((name) => {
    const handler = () => {
      stoppedBy ??= name;
      stop.abort();
    };
    process.on(name, handler);
    return [name, handler] as const;
  });
  try {
    const result = await rt.shell.run(request(positionals.join(' '), values, timeoutMs, stop.signal));
    // Issue 33.2: a terminal's ^C (or `timeout -s TERM`) reaches the whole process group, the
    // runtime's spawner helper too; its death can settle the run (exit unknown) in the same
    // loop turn, before our handler has seen the signal. Give that signal its turn.
    if (exitUnknown(result) && !stop.signal.aborted)
      await sleep(STOP_SIGNAL_WAIT_MS, undefined, { signal: stop.signal }).catch(() => {});
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else if (!values.quiet) process.stderr.write(`[tether] ${facts(result, stoppedBy)}\n`);
    return exitStatus(result, stoppedBy);
  } finally {
    for (const [name, handler] of handlers) process.off(name, handler);
    await rt.dispose();
  }
}

function request(
  command: string,
  values: { readonly cwd?: string; readonly shell?: string; readonly json?: true },
  timeoutMs: number | undefined,
  signal: AbortSignal,
): ShellRequest {
  return {
    command,
    signal,
    // Streamed to our own stdout/stderr unless the caller wants the captured result as JSON.
    stdio: values.json ? 'pipe' : 'inherit',
    // K4: with --json the printed spillPath must outlive this runtime.
    ...(values.json ? { keepSpill: true } : {}),
    // As transparent as a runner can be: the user's TERM and colour choice, not a model's
    // defaults. Pagers stay off (PAGER=cat): the command cannot read the terminal.
    ...(values.json ? {} : { env: { TERM: process.env.TERM, NO_COLOR: process.env.NO_COLOR } }),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(values.cwd !== undefined ? { cwd: values.cwd } : {}),
    ...(values.shell !== undefined ? { shell: values.shell } : {}),
  };
}

// Tether's own facts, one line: how it ended, how long it took, what could not be cleaned up.
function facts(result: ShellResult, stoppedBy: string | null): string {
  const how = result.timedOut
    ? 'timed out, tree killed'
    : result.cancelled || stoppedBy !== null
      ? `stopped by ${stoppedBy ?? 'cancellation'}, tree killed`
      : result.exitCode !== null
        ? `exit ${result.exitCode}`
        : result.signal !== null
          ? `killed by ${result.signal}`
          : `ended, its exit status is unknown (${result.lostReason ?? 'the process that could report it died'})`;
  return [
    how,
    `${Math.round(result.durationMs)} ms`,
    result.escaped ? `could not kill: ${result.escaped.join(', ')}` : null,
  ]
    .filter((fact) => fact !== null)
    .join(' · ');
}

// Neither cancelled nor timed out, and no exit code or signal: the process that could report
// the exit died first.
function exitUnknown(result: ShellResult): boolean {
  if (result.cancelled || result.timedOut) return false;
  return result.lost !== undefined || (result.exitCode === null && result.signal === null);
}

// Issue 33.2: a stop signal we received decides the status, whatever the result says.
function exitStatus(result: ShellResult, stoppedBy: NodeJS.Signals | null): number {
  if (result.timedOut) return 124;
  if (result.cancelled || stoppedBy !== null) return 128 + constants.signals[stoppedBy ?? 'SIGINT'];
  if (result.exitCode !== null) return result.exitCode;
  const signo = result.signal ? constants.signals[result.signal as NodeJS.Signals] : undefined;
  return signo === undefined ? 1 : 128 + signo;
}
