import { canReserve } from '../../machines/job-registry.js';
import { CompletionHub } from '../completions/completion-hub.js';
import { TetherError } from '../errors.js';
import { type FactBody, NO_FACTS, OUTPUT_TAIL_CHARS } from '../observe/fact-types.js';
import { RetainedOutput } from '../output/retained-output.js';
import { TurnBudget } from '../output/turn-budget.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import {
  assertJobHooks,
  assertJobId,
  assertJobSpec,
  assertReadRange,
  assertTimeout,
  normalizeExit,
  positiveInteger,
} from './job-args.js';
import {
  callHook,
  createJobRecord,
  infoOfRecord,
  isEndedRecord,
  isVisible,
  type JobRecord,
  JobRecords,
  newJobId,
  pullOutput,
  settleRecord,
  warnJobError,
} from './job-record.js';
import { StartsInFlight } from './job-starts.js';
import { jobActorOf, startJobSystem } from './job-system.js';
import type { JobHooks, JobInfo, JobService, JobServiceOptions, JobSpec } from './job-types.js';
import { JobWaiters } from './job-waiters.js';

export type { JobErrorReporter } from './job-record.js';
export type { JobServiceOptions } from './job-types.js';

const DEFAULT_READ_CHARS = 32_000;
// Starts prepared per turn of the event loop in a burst (P5): ~0.1 ms each here, so a slice
// holds the loop for a few ms whatever the burst's size.
const STARTS_PER_TURN = 16;
// Job ends and drain cancels per turn (P5): each end stops its actor and reports it (waiters,
// completions, facts), each cancel kills a process tree; 512 jobs ending or cancelled together
// in one turn held the loop for 200+ ms.
const SETTLES_PER_TURN = 16;
// Characters all reads of this service may return in one turn of the event loop (issue 30.6):
// a reader that loops on `read` without yielding (each read resolves at once while output is
// retained) would otherwise decode every job's retention in one turn; past the budget, a read
// waits for the next turn first.
const READ_CHARS_PER_TURN = 1_048_576;

/**
 * Creates the job registry (SPEC section 3): every job an actor of one XState system, the
 * per-owner cap a guard of the registry machine, output retained per job with a
 * single-consumer cursor. See {@link JobService} for the operations.
 *
 * @example
 * ```ts
 * const owners = createOwnerRegistry();
 * const jobs = createJobService({ owners });
 * const host = owners.host();
 * const info = await jobs.start(host.token, spec);
 * await jobs.wait(host.token, info.id, 10_000);
 * await jobs.dispose();
 * ```
 */
export function createJobService(options: JobServiceOptions): JobService {
  const { owners } = options;
  const limit = positiveInteger('maxRunningPerOwner', options.maxRunningPerOwner ?? 8);
  const retention = positiveInteger('retentionChars', options.retentionChars ?? 1_048_576);
  const finishedBudget = positiveInteger(
    'finishedRetentionCharsPerOwner',
    options.finishedRetentionCharsPerOwner ?? 16_777_216,
  );
  const now = options.now ?? Date.now;
  const onError = options.onError ?? warnJobError;
  const facts = options.facts ?? NO_FACTS;
  const unwatch = new Map<string, () => void>();
  const tailFact = (record: JobRecord): FactBody => ({
    type: 'job.output',
    actor: `job:${record.id}`,
    tail: record.output.peekTail(OUTPUT_TAIL_CHARS),
    end: record.output.end,
  });

  const records = new JobRecords();
  const starts = new StartsInFlight();
  const turns = new TurnBudget(STARTS_PER_TURN);
  const settleTurns = new TurnBudget(SETTLES_PER_TURN);
  const readBudget = new TurnBudget(READ_CHARS_PER_TURN);
  const waiters = new JobWaiters();
  const hub = new CompletionHub<JobInfo>((error, info) =>
    onError(error, { jobId: info.id, hook: 'onCompletion' }),
  );
  let disposing: Promise<void> | undefined;

  const pull = (record: JobRecord): void => pullOutput(record, onError);
  const ownRecords = (ownerKey: string): JobRecord[] => [...records.ofOwner(ownerKey)].filter(isVisible);

  const system = startJobSystem(
    limit,
    {
      done: async (jobId) => {
        const exit = normalizeExit(await records.get(jobId)!.hooks.done);
        await settleTurns.take();
        return exit;
      },
      cancel: (jobId) => {
        const { hooks } = records.get(jobId)!;
        callHook(onError, jobId, 'cancel', () => hooks.cancel());
      },
      ended: (jobId) => {
        const record = records.get(jobId)!;
        pull(record);
        record.output.close();
        settleRecord(record);
        record.markSettled();
        keepFinishedWithinBudget(record);
        unwatch.get(jobId)?.();
        unwatch.delete(jobId);
        facts.emit(tailFact(record)); // V1: the final tail, also for a replay (V3)
        hub.publish(record.ownerKey, infoOfRecord(record));
      },
      now,
    },
    options.inspect,
  );

  // A long-lived owner's finished jobs must not hold unbounded output: over the budget, the
  // oldest finished jobs lose their oldest unread output first (J5's `dropped` tells the reader).
  const keepFinishedWithinBudget = (justEnded: JobRecord): void => {
    const finished = ownRecords(justEnded.ownerKey).filter((r) => r === justEnded || isEndedRecord(r));
    let total = finished.reduce((n, r) => n + r.output.retained, 0);
    for (const record of finished) {
      if (total <= finishedBudget) break;
      total -= record.output.dropOldest(total - finishedBudget);
    }
  };

  const assertOpen = (): void => {
    if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the job service was disposed');
  };
  // J3: a job is visible only to its owner; another owner's job reads as not found.
  const own = (owner: AgentOwnerToken, jobId: unknown): JobRecord => {
    assertOpen();
    const ownerKey = owners.keyOf(owners.assertLive(owner));
    assertJobId(jobId);
    const record = records.get(jobId);
    if (record === undefined || !isVisible(record) || record.ownerKey !== ownerKey) {
      throw new TetherError(
        'JOB_NOT_FOUND',
        `no job '${jobId}' belongs to this owner; list() shows its jobs`,
      );
    }
    return record;
  };

  // C3/J1: preflight, then run(), then register; a failed run() leaves nothing behind.
  const register = async (
    ownerKey: string,
    spec: JobSpec,
    resume?: { readonly id: string; readonly outputStart: number },
  ): Promise<JobRecord> => {
    let id = resume?.id ?? newJobId();
    while (records.has(id)) id = newJobId();
    const output = new RetainedOutput(spec.outputCap ?? retention, resume?.outputStart ?? 0);
    let hooks: JobHooks | undefined;
    try {
      hooks = await spec.run({
        jobId: id,
        append: (text) => output.append(String(text)),
        appendAscii: (bytes) => output.appendAscii(bytes),
        appendAsciiCopy: (bytes) => output.appendAsciiCopy(bytes),
      });
      assertJobHooks(hooks);
    } catch (error) {
      // Malformed hooks may still carry a working cancel: stop what was started, if we can.
      const cancel = (hooks as Partial<JobHooks> | undefined)?.cancel;
      if (typeof cancel === 'function') callHook(onError, id, 'cancel', () => cancel.call(hooks));
      system.send({ type: 'RELEASE', ownerKey });
      throw error;
    }
    const record = createJobRecord(id, ownerKey, hooks, output);
    records.add(record);
    unwatch.set(
      id,
      facts.watch(`job:${id}`, () => {
        pull(record);
        return tailFact(record);
      }),
    );
    system.send({
      type: 'REGISTER',
      job: { jobId: id, ownerKey, kind: spec.kind, label: spec.label, startedAt: now() },
    });
    const actor = jobActorOf(system, ownerKey, id);
    if (actor === undefined) throw new Error(`jobs: no actor for ${id} after REGISTER (a registry bug)`);
    record.actor = actor;
    return record;
  };

  // J8: cancel every job of the owner (including starts in flight) until all have settled.
  const drainKey = async (ownerKey: string): Promise<void> => {
    for (;;) {
      if (await starts.settle(ownerKey)) continue;
      const live = ownRecords(ownerKey).filter((r) => !isEndedRecord(r));
      if (live.length === 0) return;
      for (const record of live) {
        await settleTurns.take();
        if (!isEndedRecord(record)) record.actor!.send({ type: 'CANCEL' }); // it may have ended meanwhile
      }
      await Promise.all(live.map((r) => r.settled));
    }
  };
  const forget = (ownerKey: string): void => {
    for (const record of ownRecords(ownerKey)) {
      records.delete(record);
      hub.forget(record.id);
    }
  };

  return {
    async start(owner, spec, opts = {}) {
      const checked = (): string => {
        if (opts.signal?.aborted) {
          throw new TetherError('ABORTED', 'the start was aborted before the job was created', {
            cause: opts.signal.reason,
          });
        }
        const ownerKey = owners.keyOf(owners.assertLive(owner));
        assertJobSpec(spec);
        assertOpen();
        return ownerKey;
      };
      checked();
      // Bad input fails in the caller's turn; a burst then goes on a slice per turn, and what
      // changed while a start waited (abort, a retired owner, dispose) is checked again.
      await turns.take();
      const ownerKey = checked();
      if (opts.resume !== undefined && records.has(opts.resume.id))
        throw new TetherError('JOB_FORBIDDEN', `job '${opts.resume.id}' is already in this runtime`);
      if (!canReserve(system.getSnapshot(), ownerKey)) {
        throw new TetherError(
          'JOB_LIMIT',
          `this owner already runs ${limit} jobs (the per-owner limit); wait for one to finish or kill one`,
        );
      }
      system.send({ type: 'RESERVE', ownerKey });
      return infoOfRecord(await starts.track(ownerKey, register(ownerKey, spec, opts.resume)));
    },

    async read(owner, jobId, cursor, maxChars = DEFAULT_READ_CHARS) {
      own(owner, jobId);
      assertReadRange(cursor, maxChars);
      if (!readBudget.hasRoom) await readBudget.nextTurn();
      const record = own(owner, jobId); // again: the owner may have retired meanwhile
      pull(record);
      const page = record.output.read(cursor, maxChars);
      readBudget.spend(page.text.length);
      return page;
    },

    async list(owner) {
      assertOpen();
      return ownRecords(owners.keyOf(owners.assertLive(owner))).map(infoOfRecord);
    },

    async wait(owner, jobId, timeoutMs) {
      const record = own(owner, jobId);
      assertTimeout(timeoutMs);
      return waiters.wait(record.settled, () => isEndedRecord(record), timeoutMs);
    },

    async kill(owner, jobId) {
      const record = own(owner, jobId);
      if (isEndedRecord(record)) return 'already_stopped';
      record.actor!.send({ type: 'CANCEL' });
      return 'requested';
    },

    onCompletion(owner, listener) {
      assertOpen();
      const ownerKey = owners.keyOf(owners.assertLive(owner));
      if (typeof listener !== 'function')
        throw new TetherError('INVALID_ARGUMENT', 'listener must be a function');
      return hub.subscribe(ownerKey, listener, () =>
        ownRecords(ownerKey).filter(isEndedRecord).map(infoOfRecord),
      );
    },

    async drainOwner(owner) {
      const token = owners.assertKnown(owner);
      const ownerKey = owners.keyOf(token);
      await drainKey(ownerKey);
      // A retired owner can never query again: its facts are released with its jobs, and its
      // actor ends (dispose ends every actor at once instead, with the system).
      if (!owners.isRetired(token)) return;
      system.send({ type: 'FORGET', ownerKey });
      forget(ownerKey);
    },

    stats() {
      const all = [...records.values()].filter(isVisible);
      return {
        jobs: all.length,
        running: all.filter((r) => !isEndedRecord(r)).length,
        starting: starts.count + turns.waiting,
        waiters: waiters.waiters,
        timers: waiters.timers,
        listeners: hub.listeners,
        deliveries: hub.deliveries,
      };
    },

    dispose() {
      disposing ??= (async () => {
        system.send({ type: 'CLOSE' });
        const keys = (): Set<string> => new Set([...starts.owners(), ...records.owners()]);
        await Promise.all([...keys()].map(drainKey));
        await hub.settle();
        hub.clear();
        for (const key of keys()) forget(key);
        system.stop();
      })();
      return disposing;
    },
  };
}
