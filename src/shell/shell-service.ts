import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertArgument, TetherError } from '../errors.js';
import type { FactSink } from '../observe/fact-types.js';
import { OutputCapture } from '../output/output-capture.js';
import type { SpillPool } from '../output/spill.js';
import type { SpillRef, SpillRetention } from '../output/spill-retention.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { PlacedProvider } from '../placement/placement-types.js';
import type { PolicyAction, PolicyCheck, PolicyStep } from '../policy/policy-types.js';
import type { ShellRequest, ShellResult } from './shell-types.js';

export interface ShellDefaults {
  readonly shell: string;
  readonly cwd: string;
  /** Characters of output kept in a result (the tail). */
  readonly outputCapChars: number;
  /** Between SIGTERM and SIGKILL. */
  readonly cleanupGraceMs: number;
  /** How long to wait for stdout/stderr to close after the shell exited. */
  readonly drainMs: number;
}

export interface ShellDeps {
  /**
   * The provider a request runs on: the owner's placement (X4), without its sandbox when the
   * request is escalated (A4; the policy step approved that before).
   */
  readonly provider: (owner: AgentOwnerToken | undefined, req: ShellRequest) => PlacedProvider;
  readonly spillPool: SpillPool | null;
  /** Who keeps published spills (K4); without it a spill file is the caller's. */
  readonly spills?: SpillRetention | null;
  readonly defaults: ShellDefaults;
  /** Aborted when the runtime is disposed: every running command is cancelled (D2). */
  readonly lifetime: AbortSignal;
  /** A1: the policy step, called before anything starts; none: everything is allowed. */
  readonly decide?: PolicyStep;
  /** V1: where background jobs report their tree kill's verdict. */
  readonly facts?: FactSink;
}

// Aborting with a fixed reason: `abort()` alone builds a DOMException every call.
const SETTLED = new Error('command settled');

/** What a model needs from a non-interactive shell: no pager, no colours, no prompts (C1). */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  TERM: 'dumb',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  NO_COLOR: '1',
};

/**
 * Runs one command through `<shell> -c` on the subprocess seam and returns its facts.
 *
 * @example
 * ```ts
 * const result = await rt.shell.run({ command: 'make test', timeoutMs: 60_000 });
 * if (result.timedOut) console.log('gave up; tail:', result.output);
 * ```
 */
export async function runShell(deps: ShellDeps, req: ShellRequest): Promise<ShellResult> {
  validateShellRequest(req);
  const started = performance.now();
  if (req.signal?.aborted || deps.lifetime.aborted) return cancelledBeforeStart(started);
  try {
    await deps.decide?.(shellPolicyCheck('shell.run', req, deps.defaults.cwd)); // A1: before anything starts
  } catch (err) {
    // Cancelled while its approval was pending: a cancellation is a result (C1).
    if (err instanceof TetherError && err.code === 'ABORTED') return cancelledBeforeStart(started);
    throw err;
  }
  if (req.signal?.aborted || deps.lifetime.aborted) return cancelledBeforeStart(started);
  return runSpawned(deps, req, started);
}

/**
 * What the policy step is told about a shell request (A1): the command as written, its cwd,
 * the escalation and justification the caller gave, and the call's signal.
 *
 * @example
 * ```ts
 * await deps.decide?.(shellPolicyCheck('shell.background', req, deps.defaults.cwd, owner));
 * ```
 */
export function shellPolicyCheck(
  action: PolicyAction,
  req: ShellRequest,
  defaultCwd: string,
  owner = req.owner,
): PolicyCheck {
  return {
    action,
    command: req.command,
    cwd: resolveCwd(defaultCwd, req.cwd), // what will run: a relative cwd as resolved
    ...(owner !== undefined ? { owner } : {}),
    ...(req.escalate !== undefined ? { escalate: req.escalate } : {}),
    ...(req.justification !== undefined ? { justification: req.justification } : {}),
    ...(req.signal !== undefined ? { signal: req.signal } : {}),
  };
}

/** The longest `timeoutMs` a Node timer holds (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** Throws INVALID_ARGUMENT naming the field for a request no shell could run. */
export function validateShellRequest(req: ShellRequest): void {
  assertArgument(typeof req === 'object' && req !== null, 'shell request must be an object { command, ... }');
  assertArgument(typeof req.command === 'string', 'command must be a string, e.g. { command: "ls -la" }');
  assertArgument(!req.command.includes('\0'), 'command must not contain NUL characters');
  assertArgument(req.command.trim() !== '', 'command must not be empty or blank, e.g. { command: "ls -la" }');
  if (req.timeoutMs !== undefined) {
    // A Node timer of 2^31 ms or more fires after 1 ms: refused like jobs.wait refuses it.
    assertArgument(
      typeof req.timeoutMs === 'number' && req.timeoutMs > 0 && req.timeoutMs <= MAX_TIMEOUT_MS,
      `timeoutMs must be a number of milliseconds in (0, ${MAX_TIMEOUT_MS}], got ${String(req.timeoutMs)}`,
    );
  }
  if (req.env !== undefined) {
    assertArgument(
      typeof req.env === 'object' && req.env !== null && !Array.isArray(req.env),
      'env must be an object of names to strings (or undefined to delete one)',
    );
    for (const [name, value] of Object.entries(req.env)) {
      assertArgument(
        name !== '' &&
          !name.includes('=') &&
          !name.includes('\0') &&
          (value === undefined || (typeof value === 'string' && !value.includes('\0'))),
        `env ${JSON.stringify(name)} must be a name without '=' with a string value without NUL (or undefined)`,
      );
    }
  }
  if (req.cwd !== undefined) {
    assertArgument(typeof req.cwd === 'string' && req.cwd !== '', 'cwd must be a non-empty string path');
  }
  if (req.shell !== undefined) {
    assertArgument(typeof req.shell === 'string' && req.shell.length > 0, 'shell must be a non-empty path');
  }
  if (req.stdio !== undefined) {
    assertArgument(
      req.stdio === 'pipe' || req.stdio === 'inherit',
      `stdio must be 'pipe' (capture the output) or 'inherit' (this process's stdout and stderr), got ${String(req.stdio)}`,
    );
  }
  if (req.escalate !== undefined) {
    assertArgument(
      typeof req.escalate === 'object' &&
        req.escalate !== null &&
        typeof req.escalate.justification === 'string' &&
        req.escalate.justification.trim().length > 0,
      'escalate must be { justification: "why this needs to run outside the sandbox" }',
    );
  }
  if (req.justification !== undefined) {
    assertArgument(typeof req.justification === 'string', 'justification must be a string');
  }
}

/**
 * The directory a command runs in: `cwd` as given when absolute, else resolved against the
 * runtime's cwd (never this process's). Whether it exists is the provider's check at spawn,
 * before anything starts (CWD_NOT_FOUND).
 *
 * @example
 * ```ts
 * resolveCwd('/repo', 'packages/a'); // '/repo/packages/a'
 * resolveCwd('/repo', undefined);    // '/repo'
 * ```
 */
export function resolveCwd(base: string, cwd: string | undefined): string {
  return cwd === undefined ? base : resolve(base, cwd);
}

async function runSpawned(deps: ShellDeps, req: ShellRequest, started: number): Promise<ShellResult> {
  const { defaults } = deps;
  const out = req.stdio ?? 'pipe';
  const provider = deps.provider(req.owner, req);
  // With 'inherit' the child writes to our fds itself: nothing to capture, nothing to drain.
  const { spills } = deps;
  const adopt = spills ? (path: string) => spills.adopt(path, { keep: req.keepSpill === true }) : undefined;
  const capture = out === 'pipe' ? new OutputCapture(defaults.outputCapChars, deps.spillPool, adopt) : null;
  const child = await provider.spawn({
    argv: [req.shell ?? defaults.shell, '-c', req.command],
    cwd: resolveCwd(defaults.cwd, req.cwd),
    stdio: { stdin: 'ignore', stdout: out, stderr: out },
    cleanupGraceMs: defaults.cleanupGraceMs,
    env: { ...NON_INTERACTIVE_ENV, ...req.env },
    ...(capture ? { onOutput: capture.feed } : {}),
  });
  const fed = child.outputFed === true;
  capture?.attach(child.stdout, fed);
  capture?.attach(child.stderr, fed);

  // One owner for the deadline and the cancellation: aborted as soon as the leader exits.
  const stop = new AbortController();
  let timedOut = false;
  let cancelled = false;
  const killFor = (reason: 'timeout' | 'cancel') => {
    if (reason === 'timeout') timedOut = true;
    else cancelled = true;
    void child.kill();
  };
  const onAbort = () => killFor('cancel');
  req.signal?.addEventListener('abort', onAbort, { once: true });
  deps.lifetime.addEventListener('abort', onAbort, { once: true });
  if (req.signal?.aborted || deps.lifetime.aborted) onAbort(); // aborted while the process was starting
  if (req.timeoutMs !== undefined) {
    sleep(req.timeoutMs, undefined, { signal: stop.signal }).then(
      () => killFor('timeout'),
      () => {},
    );
  }

  try {
    const exit = await child.exited;
    stop.abort(SETTLED);
    // A handle without pipes (a start lost with the spawner) has nothing to drain.
    const piped = child.stdout !== null || child.stderr !== null;
    const drainTimedOut =
      capture !== null && piped && !(await closedWithin(capture.closed, defaults.drainMs));
    // The shell is gone; whatever it left behind is an orphan of a one-shot command.
    const verdict = await child.kill();
    if (capture && drainTimedOut && !(await closedWithin(capture.closed, defaults.drainMs))) capture.detach();
    const { spill, ...captured } = capture
      ? await capture.finish()
      : { output: '', truncated: false, spill: undefined };
    return withLiveSpill(
      {
        exitCode: exit.exitCode,
        signal: exit.signal,
        timedOut,
        cancelled,
        ...captured,
        drainTimedOut,
        ...(exit.lost ? { lost: exit.lost.by, lostReason: exit.lost.reason } : {}),
        ...(provider.sandbox ? { sandbox: provider.sandbox } : {}),
        ...(verdict.status === 'escaped' ? { escaped: [...verdict.escaped, ...verdict.stuck] } : {}),
        durationMs: performance.now() - started,
      },
      spill,
    );
  } finally {
    stop.abort(SETTLED);
    req.signal?.removeEventListener('abort', onAbort);
    deps.lifetime.removeEventListener('abort', onAbort);
  }
}

/**
 * True when `closed` (a command's stdio closing) settles within `ms`; the timer is cleared
 * either way. The one drain deadline of `run` and of background shell jobs.
 *
 * @example
 * ```ts
 * const drainTimedOut = !(await closedWithin(capture.closed, 500));
 * ```
 */
export async function closedWithin(closed: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      closed.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, ms, false);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// K4: a result reads its spill's state live, so it never points at a file that was removed.
function withLiveSpill(result: ShellResult, spill: SpillRef | undefined): ShellResult {
  if (spill === undefined) return result;
  return Object.defineProperties(result, {
    spillPath: { get: () => (spill.removed === null ? spill.path : undefined), enumerable: true },
    spillRemoved: { get: () => spill.removed ?? undefined, enumerable: true },
  });
}

function cancelledBeforeStart(started: number): ShellResult {
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: true,
    output: '',
    truncated: false,
    drainTimedOut: false,
    durationMs: performance.now() - started,
  };
}
