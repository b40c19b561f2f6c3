import type { JobInfo } from '../jobs/job-types.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { SandboxDescription } from '../sandbox/sandbox-types.js';

/** One command for `rt.shell.run` (SPEC section 9). */
export interface ShellRequest {
  readonly command: string;
  /** Defaults to the runtime's cwd. Must exist: a missing directory throws CWD_NOT_FOUND. */
  readonly cwd?: string;
  /** Kill the whole tree after this many ms; the result says `timedOut`. */
  readonly timeoutMs?: number;
  /** Aborting kills the whole tree; the result says `cancelled`. */
  readonly signal?: AbortSignal;
  /** Overlay on the sanitized env: a string sets, `undefined` deletes (S3). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The shell that interprets `command` with `-c`; default `/bin/bash`. */
  readonly shell?: string;
  /**
   * `rt.shell.run` only: the owner the command runs for, so it runs where that owner is placed
   * (its provider, sandbox, isolation: X4, A3, K5). Default: the runtime's placement.
   */
  readonly owner?: AgentOwnerToken;
  /**
   * A4: run outside the owner's sandbox. The policy step always asks the approver first; by
   * the time the command spawns, the request was approved.
   */
  readonly escalate?: { readonly justification: string };
}

/**
 * The facts of one finished command (C1): a non-zero exit, a timeout and a cancellation are
 * results, never exceptions.
 */
export interface ShellResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  /** stdout and stderr interleaved in arrival order; the tail when `truncated`, after a marker line. */
  readonly output: string;
  /** Some earlier output is not in `output` (see the marker and `spillPath`). */
  readonly truncated: boolean;
  /** The complete raw output, published only when every byte was written and synced (C2). */
  readonly spillPath?: string;
  /** Why the output could not be spilled, when it could not. */
  readonly spillError?: string;
  /** The shell exited but a leftover process held stdout/stderr open past the drain deadline. */
  readonly drainTimedOut: boolean;
  /** Leftover processes of the tree that could not be killed (never silently dropped, S4). */
  readonly escaped?: readonly number[];
  /** A3: the sandbox the command ran in, when it ran in one. */
  readonly sandbox?: SandboxDescription;
  readonly durationMs: number;
}

/** `rt.shell`: one-shot commands (SPEC section 2). */
export interface ShellService {
  /** Runs a command to its end; exit, timeout and cancellation are result fields (C1). */
  run(req: ShellRequest): Promise<ShellResult>;
  /**
   * Starts the command as a background job of `owner` (C3) and returns its info once the
   * registry owns it. `req.signal` is checked before anything starts; `req.timeoutMs` kills
   * the job's tree when it passes.
   */
  background(owner: AgentOwnerToken, req: ShellRequest): Promise<JobInfo>;
}
