import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Completion } from '../../../machines/completion-router.js';
import { type CompletionSources, subscribeAll } from '../../completions/completion-sources.js';
import type { JobInfo } from '../../jobs/job-types.js';
import type { AgentOwnerToken } from '../../owners/owner-token.js';
import type { TerminalExit } from '../../terminals/terminal-types.js';
import { describeCompletion } from '../../tools/job-text.js';
import { describeSessionExit } from '../../tools/terminal-text.js';

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
 *   const notice = n.params.data as CompletionNoticeData;
 *   if (n.params.logger === 'tether') console.log(notice.text);
 * });
 * ```
 */
export interface JobCompletedNotice {
  readonly event: 'job_completed';
  /** The same sentence a model reads, e.g. "Background job job_x failed (exit code 1) after …". */
  readonly text: string;
  readonly job: JobInfo;
}

/** The same for a terminal whose session ended on its own (its shell exited). */
export interface TerminalExitedNotice {
  readonly event: 'terminal_exited';
  /** E.g. "Terminal term_x ended on its own (exit code 0) after 4.0 s: …". */
  readonly text: string;
  readonly terminal: TerminalExit;
}

export type CompletionNoticeData = JobCompletedNotice | TerminalExitedNotice;

/** A connection's completion forwarding; `dispose` stops it. */
export interface CompletionNotices {
  /**
   * Takes the completions not yet mentioned to the model, as lines to append to a tool result.
   * A completion whose job or terminal id already appears in `shown` (the result at hand) is dropped.
   */
  takeNotes(shown: string): string[];
  dispose(): void;
}

// The notification data of one completion: the model's sentence and the facts.
function noticeData(completion: Completion): { readonly id: string; readonly data: CompletionNoticeData } {
  if (completion.kind === 'job') {
    const { job } = completion;
    return { id: job.id, data: { event: 'job_completed', text: describeCompletion(job), job } };
  }
  const { terminal } = completion;
  return {
    id: terminal.id,
    data: { event: 'terminal_exited', text: describeSessionExit(terminal), terminal },
  };
}

/**
 * Forwards the owner's completions — ended background jobs and terminals whose session exited
 * — to the MCP client twice over: at once as a logging notification (`notifications/message`,
 * level `info`, logger `tether`, data {@link CompletionNoticeData}), and as a note appended to
 * the next tool result — many clients show log messages to the user but not to the model.
 *
 * @example
 * ```ts
 * const notices = forwardCompletions({ jobs: rt.jobs, terminals: rt.terminals }, lease.token, server, log);
 * const notes = notices.takeNotes(resultText);
 * ```
 */
export function forwardCompletions(
  sources: CompletionSources,
  owner: AgentOwnerToken,
  server: Server,
  onError: (err: unknown) => void,
): CompletionNotices {
  let pending: { readonly id: string; readonly data: CompletionNoticeData }[] = [];
  let skipped = 0;
  let active = true;
  const detach = subscribeAll(sources, owner, async (completion) => {
    if (!active) return;
    const notice = noticeData(completion);
    pending.push(notice);
    if (pending.length > MAX_NOTES) {
      pending.shift();
      skipped++;
    }
    try {
      await server.sendLoggingMessage({ level: 'info', logger: NOTICE_LOGGER, data: notice.data });
    } catch (err) {
      // J6: a failed delivery is reported, not retried; the facts stay queryable.
      if (active) onError(err);
    }
  });
  return {
    takeNotes(shown) {
      const notes = pending.filter((n) => !shown.includes(n.id)).map((n) => n.data.text);
      if (skipped > 0) notes.unshift(`${skipped} more completions were not shown; job_list shows the jobs.`);
      pending = [];
      skipped = 0;
      return notes.map((note) => `[notice] ${note}`);
    },
    dispose() {
      active = false;
      detach();
    },
  };
}
