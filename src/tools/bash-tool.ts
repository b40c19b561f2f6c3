import { TetherError } from '../errors.js';
import type { ShellRequest, ShellResult } from '../shell/shell-types.js';
import type { PersistentBashResult } from '../terminals/persistent-bash.js';
import { describeStartedJob } from './job-text.js';
import { sandboxNote } from './sandbox-text.js';
import { FACTS_RESERVE, fitTail, formatMs, withNewline } from './tool-output.js';
import { defineTool, objectSchema } from './tool-schema.js';
import type { ToolContext, ToolDefinition, ToolOutput } from './tool-types.js';

/** Foreground deadline when the model gives none (a one-shot call must end). */
export const DEFAULT_BASH_TIMEOUT_MS = 120_000;
const MAX_TIMEOUT_MS = 3_600_000;
// The shell's own truncation marker (C2); replaced by ours when we cut again.
const SHELL_MARKER = /^\[tether: \d+ earlier bytes of output omitted;[^\n]*\]\n/;

interface BashArgs {
  readonly command: string;
  readonly timeout_ms?: number;
  readonly run_in_background?: boolean;
  readonly workdir?: string;
  readonly escalate?: boolean;
  readonly justification?: string;
}

/**
 * The `bash` tool. One-shot (default): each call runs in a fresh `/bin/bash -c`. With
 * `persistent`, a foreground call runs in the owner's hidden persistent terminal (SPEC
 * section 8), so cwd and variables carry over. `run_in_background` always starts a job (C3).
 *
 * @example
 * ```ts
 * const tools = [bashTool(false), ...jobTools];
 * ```
 */
export function bashTool(persistent: boolean): ToolDefinition {
  return defineTool<BashArgs>({
    name: 'bash',
    description: persistent ? PERSISTENT_DESCRIPTION : ONE_SHOT_DESCRIPTION,
    inputSchema: objectSchema(
      {
        command: {
          type: 'string',
          minLength: 1,
          description: 'The command line to run with bash (pipes, &&, redirections and quotes work).',
        },
        workdir: {
          type: 'string',
          minLength: 1,
          description: persistent
            ? 'The directory to run in, like typing cd first: your session stays there for later calls. Relative paths are relative to the default working directory. Default: wherever your session is.'
            : 'The directory to run in. Relative paths are relative to the default working directory. Default: the default working directory. It must exist: a missing one is an error and nothing runs.',
        },
        timeout_ms: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_TIMEOUT_MS,
          description: `Deadline in milliseconds; when it passes the whole process tree is killed. Default ${DEFAULT_BASH_TIMEOUT_MS} in the foreground, none in the background.`,
        },
        run_in_background: {
          type: 'boolean',
          description:
            'true: start the command as a background job and return its job id at once (for servers, builds, long tests). Default false.',
        },
        escalate: {
          type: 'boolean',
          description:
            'true: ask to run this command outside the sandbox (only after it failed because the sandbox refused a write, a read or the network). A person must approve it; give the reason in justification. Runs as a fresh one-shot shell. Default false.',
        },
        justification: {
          type: 'string',
          minLength: 1,
          maxLength: 2000,
          description:
            'One or two sentences for the person approving commands: why this command is needed (required with escalate).',
        },
      },
      ['command'],
    ),
    async run(ctx, args) {
      if (args.escalate && args.justification === undefined) {
        throw new TetherError(
          'INVALID_ARGUMENT',
          'escalate needs a justification: say in one or two sentences why this command must run outside the sandbox',
        );
      }
      if (args.run_in_background) return background(ctx, args);
      // An escalated command cannot run inside the (sandboxed) persistent shell: it gets its own.
      return persistent && !args.escalate ? inPersistentShell(ctx, args) : oneShot(ctx, args);
    },
  });
}

const ONE_SHOT_DESCRIPTION = `Runs a shell command with /bin/bash -c and returns its output (stdout and stderr interleaved) and exit code.
Each call starts a fresh shell in the default working directory, or in workdir when you give one; cd and variables do not carry over to the next call.
stdin is closed, so interactive programs get EOF; use terminal_open and terminal_send for those.
Long output keeps its end; the complete output is saved to a file whose path the result names.
For commands that take long or never end (servers, watchers), set run_in_background: true and follow the job with job_wait, job_read and job_kill.`;

const PERSISTENT_DESCRIPTION = `Runs a shell command in your persistent bash session and returns what it printed and its exit code.
The session lives across calls: cd, exported variables, functions and aliases carry over to the next call.
It starts in the default working directory and stays wherever you cd; workdir is the same as running cd there first (the session stays there too).
Do not start interactive programs here (they would wait for input until the deadline); use terminal_open and terminal_send for those.
Long output keeps its end (no full copy is saved; redirect to a file if you need all of it).
With run_in_background: true the command runs as a background job in a fresh shell, in workdir or else the default working directory (it does not see this session's cwd or variables); follow it with job_wait, job_read and job_kill.`;

async function oneShot(ctx: ToolContext, args: BashArgs): Promise<ToolOutput> {
  const timeoutMs = args.timeout_ms ?? DEFAULT_BASH_TIMEOUT_MS;
  // With the owner: its identity is in the command's env (S3), its placement and policy (X4, A1).
  const result = await ctx.rt.shell.run(
    {
      command: args.command,
      timeoutMs,
      ...(args.workdir !== undefined ? { cwd: args.workdir } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...policyFields(args), // A1, A4: what the approver sees, the escalation asked for
    },
    ctx.owner,
  );
  const output = fitShellOutput(result, ctx.budget - FACTS_RESERVE);
  const note = result.sandbox ? sandboxNote(result.output, result.exitCode, result.sandbox) : '';
  const text = `${withNewline(output) || '(no output)\n'}${shellFacts(result, timeoutMs)}${note && `\n${note}`}`;
  const { output: _full, ...facts } = result;
  return { text, data: { ...facts, output } };
}

async function inPersistentShell(ctx: ToolContext, args: BashArgs): Promise<ToolOutput> {
  const timeoutMs = args.timeout_ms ?? DEFAULT_BASH_TIMEOUT_MS;
  const result = await ctx.rt.persistentBash.run(ctx.owner, args.command, {
    timeoutMs,
    ...(args.workdir !== undefined ? { cwd: args.workdir } : {}),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  const restarted = result.fresh && ctx.seen.has('persistent-bash');
  ctx.seen.add('persistent-bash');
  const output = fitTail(result.output, ctx.budget - FACTS_RESERVE, {
    otherwise: 'no full copy was saved (redirect to a file to keep everything)',
  });
  const text = `${withNewline(output) || '(no output)\n'}${persistentFacts(result, timeoutMs, restarted)}`;
  return { text, data: { ...result, output, restarted } };
}

async function background(ctx: ToolContext, args: BashArgs): Promise<ToolOutput> {
  const job = await ctx.rt.shell.background(ctx.owner, {
    command: args.command,
    ...(args.workdir !== undefined ? { cwd: args.workdir } : {}),
    ...(args.timeout_ms !== undefined ? { timeoutMs: args.timeout_ms } : {}),
    ...(ctx.signal ? { signal: ctx.signal } : {}),

    ...policyFields(args),
  });
  return { text: describeStartedJob(job), data: { job } };
}

// What the policy step shows the approver (A1) and the escalation asked for (A4).
function policyFields(args: BashArgs): Pick<ShellRequest, 'escalate' | 'justification'> {
  return {
    ...(args.escalate && args.justification !== undefined
      ? { escalate: { justification: args.justification } }
      : {}),
    ...(args.justification !== undefined ? { justification: args.justification } : {}),
  };
}

// The shell already cut to its cap behind its own marker; cut again only past the budget.
function fitShellOutput(result: ShellResult, room: number): string {
  if (result.output.length <= room) return result.output;
  return fitTail(result.output.replace(SHELL_MARKER, ''), room, {
    spillPath: result.spillPath,
    otherwise: result.spillError
      ? `the full output could not be saved: ${result.spillError}`
      : 'no full copy was saved',
  });
}

// One bracketed line of facts a model can act on (C1: exit, timeout and cancel are results).
export function shellFacts(r: ShellResult, timeoutMs: number): string {
  const lines: string[] = [];
  if (r.timedOut) {
    lines.push(
      `[timed out after ${formatMs(timeoutMs)}: the command's whole process tree was killed. ` +
        'Run it with run_in_background: true (then job_wait) or give a larger timeout_ms.]',
    );
  } else if (r.cancelled) {
    lines.push("[cancelled: the call was aborted and the command's process tree was killed]");
  } else if (r.lost !== undefined) {
    lines.push(
      `[result lost: ${r.lostReason ?? `the ${r.lost} process died`}; its output may be incomplete]`,
    );
  } else if (r.exitCode !== null) {
    lines.push(`[exit code ${r.exitCode} · ${formatMs(r.durationMs)}]`);
  } else {
    lines.push(`[killed by ${r.signal ?? 'a signal'} · ${formatMs(r.durationMs)}]`);
  }
  if (r.drainTimedOut) {
    lines.push('[a process the command left behind kept its output open; it was killed]');
  }
  if (r.escaped && r.escaped.length > 0) {
    lines.push(`[warning: these processes could not be killed: ${r.escaped.join(', ')}]`);
  }
  return lines.join('\n');
}

function persistentFacts(r: PersistentBashResult, timeoutMs: number, restarted: boolean): string {
  const lines: string[] = [];
  if (restarted) {
    lines.push('[a new shell session was started: cwd and variables from earlier calls are gone]');
  }
  if (r.timedOut) {
    lines.push(
      `[timed out after ${formatMs(timeoutMs)}: Ctrl-C was sent to the command. ` +
        'Run long commands with run_in_background: true (then job_wait).]',
    );
  }
  if (r.shellReset) {
    lines.push('[the shell had to be restarted: cwd and variables from earlier calls are gone]');
  }
  if (!r.timedOut) lines.push(r.exitCode === null ? '[no exit code]' : `[exit code ${r.exitCode}]`);
  return lines.join('\n');
}
