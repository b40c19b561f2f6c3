import type { TetherError } from '../errors.js';

/** The call a failure belongs to: which tool, with which (schema-checked or raw) arguments. */
export interface FailedCall {
  readonly tool: string;
  readonly args?: unknown;
}

/** A failure as a model reads it: what happened in its words, and what to do next. */
export interface ModelFailure {
  readonly message: string;
  readonly next?: string;
}

/**
 * Rewords a service error for a model (SPEC section 8). `TetherError` messages speak to a
 * library user — owners, method names like `list()`, "create a new one" — so the tools layer
 * says the same fact in tool terms: which of *your* jobs or terminals, which tool shows them,
 * which argument was wrong. The library messages stay as they are for library callers.
 *
 * @example
 * ```ts
 * modelFailure(new TetherError('JOB_NOT_FOUND', "no job 'x' belongs to this owner; list() shows its jobs"),
 *   { tool: 'job_read', args: { job_id: 'x' } });
 * // { message: "you have no job 'x'", next: 'Call job_list to see the ids of your jobs.' }
 * ```
 */
export function modelFailure(err: TetherError, call: FailedCall): ModelFailure {
  const args = (typeof call.args === 'object' && call.args !== null ? call.args : {}) as Record<
    string,
    unknown
  >;
  const jobId = String(args.job_id ?? '');
  const terminalId = String(args.terminal_id ?? '');
  const count = /\b(\d+)\b/.exec(err.message)?.[1];
  switch (err.code) {
    case 'OWNER_RETIRED':
      return {
        message: 'your session has ended: its jobs and terminals are closed',
        next: 'No tool can be used any more. Stop calling tools.',
      };
    case 'OWNER_INVALID':
      return {
        message: 'this tool call did not come from a known session',
        next: 'This is a setup error of the program that runs you, not yours to fix.',
      };
    case 'RUNTIME_DISPOSED':
      return {
        message: 'the tools are shutting down',
        next: 'No tool can be used any more.',
      };
    case 'JOB_NOT_FOUND':
    case 'JOB_FORBIDDEN':
      return { message: `you have no job '${jobId}'`, next: 'Call job_list to see the ids of your jobs.' };
    case 'JOB_LIMIT':
      return {
        message: `you already run ${count ?? 'the most'} background jobs, the most that may run at once; this one was not started`,
        next: 'Wait for one with job_wait, or stop one with job_kill, then start this one again.',
      };
    case 'TERMINAL_NOT_FOUND':
    case 'TERMINAL_FORBIDDEN':
      return {
        message: `you have no terminal '${terminalId}'`,
        next: 'Call terminal_list to see your open terminals, or terminal_open for a new one.',
      };
    case 'TERMINAL_LIMIT':
      return {
        message: `you already have ${count ?? 'the most'} open terminals, the most you may have; no terminal was opened`,
        next: 'Close one you no longer need with terminal_close, then call terminal_open again.',
      };
    case 'TERMINAL_BUSY':
      return {
        message: `terminal '${terminalId}' is still handling an earlier call`,
        next: 'Wait for that call to return before sending again.',
      };
    case 'TERMINAL_CLOSED':
      return closed(call.tool, terminalId);
    case 'CWD_NOT_FOUND':
      return missingDirectory(call.tool, args, err.message);
    case 'SPAWN_FAILED':
      return spawnFailed(call.tool, err.message);
    case 'ABORTED':
      return {
        message: `the ${call.tool} call was cancelled`,
        next: 'Whatever it had started was interrupted; nothing of it keeps running.',
      };
    default:
      return { message: err.message };
  }
}

function closed(tool: string, terminalId: string): ModelFailure {
  if (tool === 'terminal_open') {
    return {
      message: 'the terminal host crashed while the terminal was opening; no terminal was opened',
      next: 'Call terminal_open again.',
    };
  }
  if (tool === 'bash') {
    return {
      message: 'your bash session ended unexpectedly; the command did not run to its end',
      next: 'Call bash again: a new session starts (cwd and variables from earlier calls are gone).',
    };
  }
  return {
    message: `terminal '${terminalId}' has ended: its shell and every process in it are gone`,
    next: 'Open a new one with terminal_open if you need one.',
  };
}

// The library says "cwd '<resolved path>' …"; the model named it `workdir` (bash) or `cwd`.
function missingDirectory(tool: string, args: Record<string, unknown>, message: string): ModelFailure {
  const field = tool === 'bash' ? 'workdir' : 'cwd';
  const given = typeof args[field] === 'string' ? (args[field] as string) : undefined;
  const resolved = /cwd '([^']*)'/.exec(message)?.[1];
  const where = given ?? resolved ?? 'the default working directory';
  const full = resolved !== undefined && resolved !== given ? ` (${resolved})` : '';
  return {
    message: `${field} '${where}'${full} is not an existing directory; nothing was run`,
    next:
      `Pass a directory that exists as ${field}` +
      (tool === 'bash' ? ' (relative paths start at the default working directory).' : '.'),
  };
}

function spawnFailed(tool: string, message: string): ModelFailure {
  if (/PTY host worker could not start/.test(message)) {
    const why = /\(it ([^)]*)\)/.exec(message)?.[1];
    return {
      message: `terminals cannot be opened here: the terminal host could not start${why ? ` (it ${why})` : ''}`,
      next:
        tool === 'bash'
          ? 'Retrying will fail the same way; this is a setup problem of the program that runs you.'
          : 'Retrying will fail the same way; run commands with bash instead.',
    };
  }
  return { message: `the command could not be started: ${message}` };
}
