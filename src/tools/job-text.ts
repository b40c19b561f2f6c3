import type { JobInfo } from '../jobs/job-types.js';
import { formatMs } from './tool-output.js';

/**
 * A job's state in words: `running`, `stopping (kill requested)`, `succeeded (exit code 0)`,
 * `failed (exit code 2)`, `killed (SIGTERM)` — J2's two facts "asked to stop" and "stopped"
 * stay distinct.
 *
 * @example
 * ```ts
 * jobState(info); // 'failed (exit code 2)'
 * ```
 */
export function jobState(job: JobInfo): string {
  if (!job.isTerminal) return job.cancelRequested ? 'stopping (kill requested)' : 'running';
  const how =
    job.exitCode !== null ? `exit code ${job.exitCode}` : job.signal !== null ? job.signal : undefined;
  const base = how === undefined ? job.state : `${job.state} (${how})`;
  return job.error ? `${base}; error: ${job.error}` : base;
}

/**
 * One line per job for a model: id, state, how long, and the command.
 *
 * @example
 * ```ts
 * describeJob(info); // 'job_x1 · running · 4.2 s · npm test'
 * ```
 */
export function describeJob(job: JobInfo, now: number = Date.now()): string {
  const took = formatMs((job.endedAt ?? now) - job.startedAt);
  return `${job.id} · ${jobState(job)} · ${job.isTerminal ? `ran ${took}` : `running for ${took}`} · ${job.label}`;
}

/**
 * What `bash` with `run_in_background` answers: the id and how to follow the job.
 *
 * @example
 * ```ts
 * describeStartedJob(info); // 'Started background job job_x1: npm test …'
 * ```
 */
export function describeStartedJob(job: JobInfo): string {
  return (
    `Started background job ${job.id}: ${job.label}\n` +
    'It runs on its own; you will be told when it finishes. Meanwhile: job_read to see its output so far, ' +
    'job_wait to wait for it, job_kill to stop it.'
  );
}

/**
 * What a completion notice says (MCP notifications, appended notes).
 *
 * @example
 * ```ts
 * describeCompletion(info); // 'Background job job_x1 failed (exit code 1) after 3.2 s: npm test. Use job_read …'
 * ```
 */
export function describeCompletion(job: JobInfo): string {
  const took = formatMs((job.endedAt ?? job.startedAt) - job.startedAt);
  return `Background job ${job.id} ${jobState(job)} after ${took}: ${job.label}. Use job_read with job_id "${job.id}" to see its output.`;
}
