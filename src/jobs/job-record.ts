import { randomBytes } from 'node:crypto';
import type { ActorRefFrom } from 'xstate';
import type { jobMachine } from '../../machines/job.js';
import type { RetainedOutput } from '../output/retained-output.js';
import { isTerminalSnapshot, jobInfoOf } from './job-info.js';
import type { JobErrorReporter, JobHooks, JobInfo } from './job-types.js';

export type { JobErrorReporter } from './job-types.js';

/**
 * What the registry holds for one job: the producer's hooks, the output buffer, and the job
 * actor whose snapshot is the job's lifecycle — then, once it ended, what its final snapshot
 * says (see {@link settleRecord}). `settled` resolves when the actor ended.
 */
export interface JobRecord {
  readonly id: string;
  readonly ownerKey: string;
  /** The producer's; {@link ENDED_HOOKS} once the job ended (see {@link settleRecord}). */
  hooks: JobHooks;
  readonly output: RetainedOutput;
  readonly settled: Promise<void>;
  readonly markSettled: () => void;
  /**
   * Set in the same step that spawns the actor; records without one (nor `final`) are not
   * visible yet. Undefined again once the job ended and `final` holds what it said.
   */
  actor: ActorRefFrom<typeof jobMachine> | undefined;
  /** The job's info from its actor's final snapshot, once it ended (see {@link settleRecord}). */
  final: JobInfo | undefined;
}

/**
 * A record for a job whose `run()` returned `hooks`, not yet registered with the system.
 *
 * @example
 * ```ts
 * const record = createJobRecord(id, 'o1', hooks, new RetainedOutput(1024));
 * record.markSettled(); // resolves record.settled
 * ```
 */
export function createJobRecord(
  id: string,
  ownerKey: string,
  hooks: JobHooks,
  output: RetainedOutput,
): JobRecord {
  let markSettled = (): void => {};
  const settled = new Promise<void>((resolve) => {
    markSettled = resolve;
  });
  // Every field from the start: an object whose fields come and go loses V8's fast layout.
  return { id, ownerKey, hooks, output, settled, markSettled, actor: undefined, final: undefined };
}

/** What an ended job's record holds instead of its producer's hooks: nothing of the process. */
export const ENDED_HOOKS: JobHooks = Object.freeze({
  cancel() {},
  done: new Promise<never>(() => {}),
});

/**
 * Lets go of the producer's hooks and of the stopped job actor once the job ended: its output
 * is in the record's buffer, and its lifecycle can no longer change, so what the actor's final
 * snapshot says is kept instead (derived from it, never a parallel status). The hooks held the
 * process handle, its pipes and controllers (17 KB of heap per finished `echo` job), the actor
 * its mailbox, closures and snapshot (~1.3 KB), all kept until the owner ends (P8: 12,000 jobs
 * in a minute).
 *
 * @example
 * ```ts
 * record.output.close();
 * settleRecord(record); // in the registry's step that reports the job's actor ended
 * infoOfRecord(record).isTerminal; // true
 * ```
 */
export function settleRecord(record: JobRecord): void {
  record.hooks = ENDED_HOOKS;
  if (record.actor === undefined) return;
  const snapshot = record.actor.getSnapshot();
  if (!isTerminalSnapshot(snapshot)) return; // not ended after all: keep asking the actor
  record.final = jobInfoOf(snapshot);
  record.actor = undefined;
}

/**
 * A registered job's info: from its actor's snapshot while it runs, its final one after. A new
 * object each time, as while it ran: what one caller does to it is not the next one's answer.
 *
 * @example
 * ```ts
 * const info = infoOfRecord(record); // what jobs.list and jobs.start report
 * ```
 */
export function infoOfRecord(record: JobRecord): JobInfo {
  return record.final !== undefined ? { ...record.final } : jobInfoOf(record.actor!.getSnapshot());
}

/** Whether the job is registered (its actor was spawned), ended or not: only then is it visible. */
export function isVisible(record: JobRecord): boolean {
  return record.actor !== undefined || record.final !== undefined;
}

/** Whether the job ended (J2), without building its info. */
export function isEndedRecord(record: JobRecord): boolean {
  return record.final !== undefined || isTerminalSnapshot(record.actor!.getSnapshot());
}

/**
 * Every job record by id, and each owner's: an owner's jobs are found without a walk over
 * everyone's (P8: 1,000 owners keep 12,000 finished jobs, and each job's end looks at its
 * owner's finished ones).
 *
 * @example
 * ```ts
 * const records = new JobRecords();
 * records.add(record);
 * [...records.ofOwner('o1')]; // [record]
 * ```
 */
export class JobRecords {
  readonly #byId = new Map<string, JobRecord>();
  readonly #byOwner = new Map<string, Set<JobRecord>>();

  get(id: string): JobRecord | undefined {
    return this.#byId.get(id);
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  values(): IterableIterator<JobRecord> {
    return this.#byId.values();
  }

  /** The owners that have a record. */
  owners(): IterableIterator<string> {
    return this.#byOwner.keys();
  }

  ofOwner(ownerKey: string): Iterable<JobRecord> {
    return this.#byOwner.get(ownerKey) ?? [];
  }

  add(record: JobRecord): void {
    this.#byId.set(record.id, record);
    const mine = this.#byOwner.get(record.ownerKey);
    if (mine === undefined) this.#byOwner.set(record.ownerKey, new Set([record]));
    else mine.add(record);
  }

  delete(record: JobRecord): void {
    this.#byId.delete(record.id);
    const mine = this.#byOwner.get(record.ownerKey);
    mine?.delete(record);
    if (mine?.size === 0) this.#byOwner.delete(record.ownerKey);
  }
}

/**
 * Calls a producer hook; a throw is reported and becomes `undefined`.
 *
 * @example
 * ```ts
 * const text = callHook(report, record.id, 'readOutput', () => hooks.readOutput?.());
 * ```
 */
export function callHook<T>(
  report: JobErrorReporter,
  jobId: string,
  hook: string,
  fn: () => T,
): T | undefined {
  try {
    const result = fn();
    if (result instanceof Promise) result.catch((error: unknown) => report(error, { jobId, hook }));
    return result;
  } catch (error) {
    report(error, { jobId, hook });
    return undefined;
  }
}

/**
 * Moves what a pull-style producer (`readOutput`) has into the job's buffer (J1, J5).
 *
 * @example
 * ```ts
 * pullOutput(record, report); // before every read and once when the job ends
 * ```
 */
export function pullOutput(record: JobRecord, report: JobErrorReporter): void {
  const { hooks, output } = record;
  if (hooks.readOutput === undefined || output.closed) return;
  const text = callHook(report, record.id, 'readOutput', () => hooks.readOutput?.());
  if (typeof text === 'string') output.append(text);
}

/**
 * The default error path: a process warning, visible and never thrown.
 *
 * @example
 * ```ts
 * createJobService({ owners, onError: warnJobError });
 * ```
 */
export function warnJobError(error: unknown, where: { readonly jobId: string; readonly hook: string }): void {
  const text = error instanceof Error ? error.message : String(error);
  process.emitWarning(`job ${where.jobId}: ${where.hook} failed: ${text}`, { code: 'TETHER_JOB_HOOK' });
}

// Random bytes for 256 ids at a time, each used once: one `randomBytes(9)` per job was a
// getrandom call and a Buffer each, 7.2–7.4 µs an id alone against 0.2 pooled, and 2 % of the
// main thread's CPU in a profile of 3,300 `echo` jobs (47 µs a job there, under load).
const ID_BYTES = 9;
let idPool = Buffer.alloc(0);
let idAt = 0;

/**
 * A short unguessable job id: jobs are capabilities of their owner, not global handles.
 *
 * @example
 * ```ts
 * newJobId(); // 'job_Xb3k9QpL2vTz'
 * ```
 */
export function newJobId(): string {
  if (idAt + ID_BYTES > idPool.length) {
    idPool = randomBytes(ID_BYTES * 256);
    idAt = 0;
  }
  idAt += ID_BYTES;
  return `job_${idPool.toString('base64url', idAt - ID_BYTES, idAt)}`;
}
