import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { createRuntime } from '../runtime.js';
import type { ShellResult } from '../shell/shell-types.js';
import { sandboxFlag } from './sandbox-flag.js';
import { RUN_USAGE, UsageError } from './usage.js';

/** `tether run [options] -- <command...>`: one command through the runtime, result printed. */
export async function runCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseRunArgs(args);
  if (values.help) {
    process.stdout.write(RUN_USAGE);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError('run needs a command, e.g. tether run -- echo hello');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new UsageError(`--timeout takes a positive number of milliseconds, got '${values.timeout}'`);
  }

  const rt = await createRuntime({ ...sandboxFlag(values.sandbox) });
  const cancel = new AbortController();
  const onSigint = () => cancel.abort();
  process.once('SIGINT', onSigint);
  try {
    const result = await rt.shell.run({
      command: positionals.join(' '),
      signal: cancel.signal,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(values.cwd !== undefined ? { cwd: values.cwd } : {}),
      ...(values.shell !== undefined ? { shell: values.shell } : {}),
    });
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else report(result);
    return exitStatus(result);
  } finally {
    process.off('SIGINT', onSigint);
    await rt.dispose();
  }
}

function parseRunArgs(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        timeout: { type: 'string' },
        cwd: { type: 'string' },
        shell: { type: 'string' },
        sandbox: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

// The output on stdout as the command printed it; the facts on stderr, one line.
function report(result: ShellResult): void {
  process.stdout.write(result.output);
  const facts = [
    result.timedOut ? 'timed out' : result.cancelled ? 'cancelled' : null,
    result.exitCode !== null ? `exit ${result.exitCode}` : `killed by ${result.signal}`,
    `${Math.round(result.durationMs)} ms`,
    result.spillPath ? `full output: ${result.spillPath}` : null,
    result.spillError ? `full output not saved: ${result.spillError}` : null,
    result.drainTimedOut ? 'a leftover process held the output open' : null,
    result.escaped ? `could not kill: ${result.escaped.join(', ')}` : null,
  ].filter((fact) => fact !== null);
  const newline = result.output.length > 0 && !result.output.endsWith('\n') ? '\n' : '';
  process.stderr.write(`${newline}[tether] ${facts.join(' · ')}\n`);
}

function exitStatus(result: ShellResult): number {
  if (result.timedOut) return 124;
  if (result.cancelled) return 130;
  if (result.exitCode !== null) return result.exitCode;
  const signo = result.signal ? constants.signals[result.signal as NodeJS.Signals] : undefined;
  return 128 + (signo ?? 0);
}
