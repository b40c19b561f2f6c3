import type { SnapshotFrom } from 'xstate';
import type { jobMachine } from '../../machines/job.js';
import type { JobInfo, JobState } from './job-types.js';

/** A job actor's snapshot: the single source of truth for its lifecycle. */
export type JobSnapshot = SnapshotFrom<typeof jobMachine>;

/**
 * Whether a job snapshot is final (J2). An actor that an error escaped from is final too.
 *
 * @example
 * ```ts
 * if (isTerminalSnapshot(actor.getSnapshot())) return 'already_stopped';
 * ```
 */
export function isTerminalSnapshot(snapshot: JobSnapshot): boolean {
  return snapshot.status !== 'active';
}

/**
 * The owner-facing facts of a job, derived from its actor's snapshot (no parallel status).
 *
 * @example
 * ```ts
 * const info = jobInfoOf(record.actor.getSnapshot());
 * info.state; // 'running' | 'succeeded' | 'failed' | 'killed'
 * ```
 */
export function jobInfoOf(snapshot: JobSnapshot): JobInfo {
  const { context } = snapshot;
  const state = stateOf(snapshot);
  const escaped = snapshot.status === 'error';
  return {
    id: context.jobId,
    kind: context.kind,
    label: context.label,
    state,
    isTerminal: isTerminalSnapshot(snapshot),
    cancelRequested: state === 'killed' || snapshot.matches({ running: 'cancelRequested' }),
    exitCode: context.exitCode,
    signal: context.signal,
    error: escaped ? `job actor failed: ${String(snapshot.error)}` : context.error,
    startedAt: context.startedAt,
    endedAt: context.endedAt,
  };
}

// The state value's top-level name; an actor in error status counts as failed.
function stateOf(snapshot: JobSnapshot): JobState {
  if (snapshot.status === 'error') return 'failed';
  if (snapshot.matches('running')) return 'running';
  if (snapshot.matches('succeeded')) return 'succeeded';
  return snapshot.matches('killed') ? 'killed' : 'failed';
}
