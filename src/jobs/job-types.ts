import type { InspectionEvent } from 'xstate';
import type { JobInfo } from '../../machines/facts.js';
import type { JobExit } from '../../machines/job.js';
import type { CompletionSubscription } from '../completions/completion-hub.js';
import type { FactSink } from '../observe/fact-types.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';

export type { JobInfo, JobState } from '../../machines/facts.js';
export type { JobExit } from '../../machines/job.js';

/**
 * One page of a job's output (SPEC J5). `cursor` is where the next read continues;
 * `dropped` counts characters between the cursor you passed and the first character of
 * `text` that are gone (retention overflow), and `lossy` is `dropped > 0`. `done` means no
 * more output will ever come (the job is terminal and everything retained was read).
 */
export interface JobPage {
  readonly text: string;
  readonly cursor: number;
  readonly lossy: boolean;
  readonly dropped: number;
  readonly done: boolean;
}

/** `requested`: the job was running and was asked to stop. `already_stopped`: it was terminal. */
export type KillResult = 'requested' | 'already_stopped';

/**
 * What a producer's `run()` returns (SPEC J1): the hooks the registry owns from then on.
 *
 * - `cancel` asks the work to stop (J7: for a process, interrupt then tree-kill). It may be
 *   called more than once and must not throw; the job stays `running.cancelRequested` until
 *   `done` settles.
 * - `done` resolves exactly when the work is over and its resources are gone (for a process:
 *   the tree was verified gone), after the last `append`. It must never reject; if it does,
 *   the job becomes `failed` with the rejection's text.
 * - `readOutput` (optional, pull-style): returns and forgets the text produced since its last
 *   call. The registry calls it before every read and once when the job settles. Producers
 *   that stream should prefer {@link JobRunContext.append}.
 */
export interface JobHooks {
  cancel(): void | Promise<void>;
  readonly done: Promise<JobExit>;
  readOutput?(): string;
}

/**
 * What the registry gives a producer. `append` is the push-style output sink (preferred):
 * decoded text goes straight into the job's bounded retention buffer (J5), so the producer
 * keeps no buffer of its own. Text appended after `done` resolved is counted as dropped.
 */
export interface JobRunContext {
  readonly jobId: string;
  append(text: string): void;
  /**
   * Output bytes that are all ASCII (`buffer.isAscii`), kept as bytes and turned into text only
   * when read: a flood then retains no strings for the garbage collector to copy (P2, X1
   * throughput). The buffer must not be written to afterwards.
   */
  appendAscii?(bytes: Buffer): void;
  /**
   * Like {@link JobRunContext.appendAscii}, but the bytes are copied (into recycled slabs), so
   * `bytes` may be a reader's reused buffer (a spawn's `onOutput`): a flood then allocates
   * nothing per read (issue 30.6).
   */
  appendAsciiCopy?(bytes: Uint8Array): void;
}

/**
 * A producer-neutral job description (SPEC J1). The registry knows nothing of commands,
 * PTYs or sub-agents: only `kind`, `label`, an optional retention cap and `run`.
 *
 * @example
 * ```ts
 * const spec: JobSpec = {
 *   kind: 'shell', label: 'npm test',
 *   run: async (ctx) => {
 *     const child = await provider.spawn(spawnSpec);
 *     child.stdout?.setEncoding('utf8').on('data', ctx.append);
 *     return { cancel: () => void child.kill(), done: child.exited.then(async (exit) => {
 *       await child.kill(); return exit; }) };
 *   },
 * };
 * ```
 */
export interface JobSpec {
  readonly kind: string;
  readonly label: string;
  /** Retention cap in characters for this job (default: the service's `retentionChars`). */
  readonly outputCap?: number;
  /**
   * Starts the work. Throwing or rejecting means nothing started: nothing is registered and
   * the capacity slot is released; the error propagates to the `start` caller.
   */
  run(ctx: JobRunContext): JobHooks | Promise<JobHooks>;
}

/** A completion subscription: dispose it to stop deliveries (also `using sub = …`). */
export type JobSubscription = CompletionSubscription;

/** Counts of the service's live resources; all zero (but `jobs`) when it is quiescent (D3). */
export interface JobServiceStats {
  /** Job records held (live and terminal, until drained). */
  readonly jobs: number;
  /** Jobs not yet terminal. */
  readonly running: number;
  /** `start` calls waiting for their turn (a burst, P5) or between the capacity reservation and registration. */
  readonly starting: number;
  /** Pending `wait` calls. */
  readonly waiters: number;
  /** Timers armed by `wait`. */
  readonly timers: number;
  /** Subscribed completion listeners. */
  readonly listeners: number;
  /** Completion deliveries in flight (a listener's promise not yet settled). */
  readonly deliveries: number;
}

/**
 * The background job registry (SPEC section 3). Every method takes the caller's owner
 * token; a job is never visible to another owner (J3).
 *
 * @example
 * ```ts
 * const info = await jobs.start(owner, spec);
 * while (!(await jobs.wait(owner, info.id, 1000))) {}
 * const page = await jobs.read(owner, info.id, 0);
 * ```
 */
export interface JobService {
  /**
   * `opts.resume` (K6): the job is one a previous runtime started, taken over under its own `id`;
   * its output goes on from character `outputStart` (reads of earlier cursors say `dropped`).
   */
  start(
    owner: AgentOwnerToken,
    spec: JobSpec,
    opts?: { signal?: AbortSignal; resume?: { readonly id: string; readonly outputStart: number } },
  ): Promise<JobInfo>;
  read(owner: AgentOwnerToken, jobId: string, cursor: number, maxChars?: number): Promise<JobPage>;
  list(owner: AgentOwnerToken): Promise<JobInfo[]>;
  wait(owner: AgentOwnerToken, jobId: string, timeoutMs: number): Promise<boolean>;
  kill(owner: AgentOwnerToken, jobId: string): Promise<KillResult>;
  onCompletion(owner: AgentOwnerToken, listener: (info: JobInfo) => void | Promise<void>): JobSubscription;
  drainOwner(owner: AgentOwnerToken): Promise<void>;
  /** Live resource counts, for tests and operators (D3). */
  stats(): JobServiceStats;
  /** Drains every owner, settles deliveries and stops the actor system (D2). Idempotent. */
  dispose(): Promise<void>;
}

/** Where a producer hook or listener failure is reported (never thrown into the runtime). */
export type JobErrorReporter = (
  error: unknown,
  where: { readonly jobId: string; readonly hook: string },
) => void;

/** Options of `createJobService`. */
export interface JobServiceOptions {
  /** The composition root's owner registry; only its tokens are accepted (O1–O3). */
  readonly owners: OwnerRegistry;
  /** J4: running jobs per owner (default 8). */
  readonly maxRunningPerOwner?: number;
  /** J5: default retention per job in characters (default 1 MiB = 1_048_576). */
  readonly retentionChars?: number;
  /**
   * Unread output all finished jobs of one owner keep together, in characters (default
   * 16 Mi = 16_777_216): when a job ends past it, the oldest finished jobs' oldest output is
   * dropped first (their next read says `lossy`/`dropped`); their facts always stay.
   */
  readonly finishedRetentionCharsPerOwner?: number;
  /** XState inspector for the job actor system. */
  readonly inspect?: (event: InspectionEvent) => void;
  /** V1/V2: where each job's output tail is offered to observers. */
  readonly facts?: FactSink;
  /** Listener and producer hook failures (default: a process warning). */
  readonly onError?: JobErrorReporter;
  /** Wall clock for `startedAt`/`endedAt` (default `Date.now`). */
  readonly now?: () => number;
}
