import type { JobInfo } from '../jobs/job-types.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { SandboxDescription } from '../sandbox/sandbox-types.js';

/** One command for `rt.shell.run` (SPEC section 9). */
export interface ShellRequest {
  readonly command: string;
  /**
   * Defaults to the runtime's cwd; a relative path is resolved against it. Must exist: a
   * missing directory throws CWD_NOT_FOUND before anything starts.
   */
  readonly cwd?: string;
  /**
   * A1: why the model wants this command, shown to the approver. The request's `owner` (an
   * agent's replaces the runtime's) decides which policy applies; without a policy an
   * `escalate` is denied (nobody to ask).
   */
  readonly justification?: string;
  /** Kill the whole tree after this many ms; the result says `timedOut`. */
  readonly timeoutMs?: number;
  /** Aborting kills the whole tree; the result says `cancelled`. */
  readonly signal?: AbortSignal;
  /** Overlay on the sanitized env: a string sets, `undefined` deletes (S3). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The shell that interprets `command` with `-c`; default `/bin/bash`. */
  readonly shell?: string;
  /**
   * K4: keep the spill file (if the output is spilled) after the runtime is disposed. It is then
   * written to the spill root, outside the runtime's own spill directory, and is yours to remove.
   * Default: the runtime removes it on dispose, or earlier when `limits.spillBudgetBytes` needs room.
   */
  readonly keepSpill?: boolean;
  /**
   * Where the command's stdout and stderr go. `'pipe'` (the default): captured into the
   * result's `output` (the tail, the rest spilled, C2). `'inherit'`: straight to this
   * process's own stdout and stderr (fd 1 and 2), as a plain shell would: streamed live, every
   * byte, stdout and stderr kept apart, with the kernel's backpressure (a slow reader slows the
   * command, nothing piles up in memory). The result's `output` is then `''`, `truncated`
   * false and there is no spill. Only for `run`: `background` refuses it (a job's output is
   * read with `jobs.read`).
   */
  readonly stdio?: 'pipe' | 'inherit';
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
  /**
   * stdout and stderr interleaved in arrival order; the tail when `truncated`, after a marker
   * line. Always `''` for a request with `stdio: 'inherit'` (the output went to this process's
   * own stdout and stderr).
   */
  readonly output: string;
  /** Some earlier output is not in `output` (see the marker and `spillPath`). */
  readonly truncated: boolean;
  /**
   * The complete raw output, published only when every byte was written and synced (C2).
   * Read live: `undefined` again once the runtime removed the file (then `spillRemoved` says why).
   */
  readonly spillPath?: string | undefined;
  /** K4: the spill was removed — `budget` (`limits.spillBudgetBytes`) or `disposed`. */
  readonly spillRemoved?: 'budget' | 'disposed' | undefined;
  /** Why the output could not be spilled, when it could not. */
  readonly spillError?: string;
  /** The shell exited but a leftover process held stdout/stderr open past the drain deadline. */
  readonly drainTimedOut: boolean;
  /**
   * `'spawner'`: the local spawner process died while this command was starting or running,
   * and its exit status or part of its output could not be learned (issue 30.3). `exitCode`
   * and `signal` are then `null` — never 0 for what was not seen — and `lostReason` says what
   * is unknown. A command whose pipes and exit the runtime still saw has no `lost`, even if
   * the spawner died meanwhile.
   *
   * @example
   * ```ts
   * const r = await rt.shell.run({ command: 'make' });
   * if (r.lost) console.error(r.lostReason); // 'the spawner process died (SIGKILL) while …'
   * ```
   */
  readonly lost?: 'spawner';
  /** Why `lost`: a sentence saying what died and what is unknown (the exit status, the output). */
  readonly lostReason?: string;
  /** Leftover processes of the tree that could not be killed (never silently dropped, S4). */
  readonly escaped?: readonly number[];
  /** A3: the sandbox the command ran in, when it ran in one. */
  readonly sandbox?: SandboxDescription;
  readonly durationMs: number;
}

/** `rt.shell`: one-shot commands (SPEC section 2). */
export interface ShellService {
  /**
   * Runs a command to its end; exit, timeout and cancellation are result fields (C1). With
   * `owner` (what the `bash` tool passes), the owner must be live and the command's env gets
   * its identity: `TETHER_SESSION_ID` and `TETHER_AGENT_ID` for an agent (S3).
   */
  run(req: ShellRequest, owner?: AgentOwnerToken): Promise<ShellResult>;
  /**
   * Starts the command as a background job of `owner` (C3) and returns its info once the
   * registry owns it. `req.signal` is checked before anything starts; `req.timeoutMs` kills
   * the job's tree when it passes. Its env has the owner's identity and `TETHER_JOB_ID` (S3).
   */
  background(owner: AgentOwnerToken, req: ShellRequest): Promise<JobInfo>;
}
