import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JobInfo, JobService } from '../../jobs/job-types.js';
import type { AgentOwnerToken } from '../../owners/owner-token.js';
import { describeCompletion } from '../../tools/job-text.js';

/** The MCP `logger` name on every notice Tether sends. */
export const NOTICE_LOGGER = 'tether';
/** Notes kept for the next tool result at most; older ones are summarized as a count. */
const MAX_NOTES = 20;

/**
 * The `data` of a `notifications/message` (level `info`, logger `tether`) that reports a
 * background job's completion to an MCP client.
 *
 * @example
 * ```ts
 * client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
 *   const notice = n.params.data as JobCompletedNotice;
 *   if (n.params.logger === 'tether' && notice.event === 'job_completed') console.log(notice.text);
 * });
 * ```
 */
export interface JobCompletedNotice {
  readonly event: 'job_completed';
  /** The same sentence a model reads, e.g. "Background job job_x failed (exit code 1) after …". */
  readonly text: string;
  readonly job: JobInfo;
}

/** A connection's completion forwarding; `dispose` stops it. */
export interface CompletionNotices {
  /**
   * Takes the completions not yet mentioned to the model, as lines to append to a tool result.
   * A completion whose job id already appears in `shown` (the result at hand) is dropped.
   */
  takeNotes(shown: string): string[];
  dispose(): void;
}

/**
 * Forwards the owner's job completions to the MCP client twice over: at once as a logging
 * notification (`notifications/message`, level `info`, logger `tether`, data
 * {@link JobCompletedNotice}), and as a note appended to the next tool result — many clients
 * show log messages to the user but not to the model.
 *
 * @example
 * ```ts
 * const notices = forwardCompletions(rt.jobs, lease.token, server, (err) => log(String(err)));
 * const notes = notices.takeNotes(resultText);
 * ```
 */
export function forwardCompletions(
  jobs: JobService,
  owner: AgentOwnerToken,
  server: Server,
  onError: (err: unknown) => void,
): CompletionNotices {
  let pending: JobInfo[] = [];
  let skipped = 0;
  let active = true;
  const subscription = jobs.onCompletion(owner, async (job) => {
    if (!active) return;
    pending.push(job);
    if (pending.length > MAX_NOTES) {
      pending.shift();
      skipped++;
    }
    const data: JobCompletedNotice = { event: 'job_completed', text: describeCompletion(job), job };
    try {
      await server.sendLoggingMessage({ level: 'info', logger: NOTICE_LOGGER, data });
    } catch (err) {
      // J6: a failed delivery is reported, not retried; the job's facts stay queryable.
      if (active) onError(err);
    }
  });
  return {
    takeNotes(shown) {
      const notes = pending.filter((job) => !shown.includes(job.id)).map((job) => describeCompletion(job));
      if (skipped > 0) notes.unshift(`${skipped} more background jobs finished; job_list shows them all.`);
      pending = [];
      skipped = 0;
      return notes.map((note) => `[notice] ${note}`);
    },
    dispose() {
      active = false;
      subscription.dispose();
    },
  };
}
