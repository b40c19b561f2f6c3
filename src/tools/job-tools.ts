import type { JobInfo } from '../jobs/job-types.js';
import { describeCompletion, describeJob, jobState } from './job-text.js';
import { FACTS_RESERVE, formatMs, withNewline } from './tool-output.js';
import { defineTool, objectSchema } from './tool-schema.js';
import type { ToolContext, ToolDefinition } from './tool-types.js';

const DEFAULT_WAIT_MS = 30_000;
const MAX_WAIT_MS = 600_000;
// job_wait waits in slices so an aborted call returns within one slice, leaving no waiter.
const WAIT_SLICE_MS = 500;

const jobId = {
  type: 'string',
  minLength: 1,
  description: 'The job id, as returned by bash with run_in_background or listed by job_list.',
};

const jobList = defineTool<Record<string, never>>({
  name: 'job_list',
  description:
    'Lists your background jobs (running and finished) with their id, state, exit code, duration and command.',
  inputSchema: objectSchema({}),
  async run(ctx) {
    const jobs = await ctx.rt.jobs.list(ctx.owner);
    const now = Date.now();
    const text =
      jobs.length === 0
        ? 'You have no background jobs. Start one with bash and run_in_background: true.'
        : jobs.map((job) => describeJob(job, now)).join('\n');
    return { text, data: { jobs } };
  },
});

const jobRead = defineTool<{ job_id: string; cursor?: number; max_chars?: number }>({
  name: 'job_read',
  description: `Reads a background job's output (stdout and stderr interleaved) from where your last job_read of it stopped.
Reading consumes: the next call continues after what you already saw. Works while the job runs and after it ended.`,
  inputSchema: objectSchema(
    {
      job_id: jobId,
      cursor: {
        type: 'integer',
        minimum: 0,
        description:
          'Where to continue (the cursor a previous job_read returned). Default: where you stopped.',
      },
      max_chars: {
        type: 'integer',
        minimum: 1,
        description: 'At most this many characters (capped by the output budget).',
      },
    },
    ['job_id'],
  ),
  async run(ctx, args) {
    const key = `job:${args.job_id}`;
    const cursor = args.cursor ?? ctx.cursors.get(key) ?? 0;
    const maxChars = Math.min(args.max_chars ?? ctx.budget, ctx.budget - FACTS_RESERVE);
    const page = await ctx.rt.jobs.read(ctx.owner, args.job_id, cursor, maxChars);
    ctx.cursors.set(key, page.cursor);
    const lines: string[] = [];
    if (page.dropped > 0) {
      lines.push(
        `[tether: ${page.dropped} characters before this point are not available (already read, or dropped by the retention limit)]`,
      );
    }
    lines.push(withNewline(page.text) || '(no new output)\n');
    if (page.done) {
      const job = await findJob(ctx, args.job_id);
      lines.push(`[end of output: the job ${job ? jobState(job) : 'ended'}]`);
    } else if (page.text.length >= maxChars) {
      lines.push(`[more output is waiting: call job_read again (cursor ${page.cursor})]`);
    } else {
      lines.push(
        `[the job is still running (cursor ${page.cursor}): job_wait to wait for it, or job_read later for more]`,
      );
    }
    return { text: lines.join(''), data: { ...page, jobId: args.job_id } };
  },
});

const jobWait = defineTool<{ job_id: string; timeout_ms?: number }>({
  name: 'job_wait',
  description:
    'Waits until a background job finishes or timeout_ms passes, then says which. It does not return output: use job_read for that.',
  inputSchema: objectSchema(
    {
      job_id: jobId,
      timeout_ms: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_WAIT_MS,
        description: `How long to wait at most, in milliseconds. Default ${DEFAULT_WAIT_MS}.`,
      },
    },
    ['job_id'],
  ),
  async run(ctx, args) {
    const timeoutMs = args.timeout_ms ?? DEFAULT_WAIT_MS;
    const finished = await waitSliced(ctx, args.job_id, timeoutMs);
    const job = await findJob(ctx, args.job_id);
    const data = { finished, cancelled: ctx.signal?.aborted === true, job };
    if (finished && job) return { text: describeCompletion(job), data };
    const waited = ctx.signal?.aborted ? 'job_wait was cancelled' : `after waiting ${formatMs(timeoutMs)}`;
    return {
      text:
        `Job ${args.job_id} is still running (${waited}). ` +
        'Call job_wait again to keep waiting, job_read to see its output so far, or job_kill to stop it.',
      data,
    };
  },
});

const jobKill = defineTool<{ job_id: string }>({
  name: 'job_kill',
  description:
    'Stops a background job: interrupts it (SIGINT), then terminates its whole process tree. Says whether a kill was requested or the job had already stopped.',
  inputSchema: objectSchema({ job_id: jobId }, ['job_id']),
  async run(ctx, args) {
    const outcome = await ctx.rt.jobs.kill(ctx.owner, args.job_id);
    const job = await findJob(ctx, args.job_id);
    const text =
      outcome === 'requested'
        ? `Kill requested for job ${args.job_id}: it is being interrupted and its process tree terminated. ` +
          'Call job_wait to see it end, then job_read for its last output.'
        : `Job ${args.job_id} had already stopped (${job ? jobState(job) : 'ended'}): there was nothing to kill.`;
    return { text, data: { result: outcome, job } };
  },
});

// Waits in short slices (the job service's waiter cannot be cancelled) so `signal` is honoured.
async function waitSliced(ctx: ToolContext, id: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const left = Math.max(0, deadline - performance.now());
    const slice = ctx.signal ? Math.min(left, WAIT_SLICE_MS) : left;
    if (await ctx.rt.jobs.wait(ctx.owner, id, Math.ceil(slice))) return true;
    if (left <= slice || ctx.signal?.aborted) return false;
  }
}

async function findJob(ctx: ToolContext, id: string): Promise<JobInfo | undefined> {
  return (await ctx.rt.jobs.list(ctx.owner)).find((job) => job.id === id);
}

/**
 * The four job tools (SPEC section 8): `job_list`, `job_read`, `job_wait`, `job_kill`.
 *
 * @example
 * ```ts
 * const tools = [bashTool(false), ...jobTools];
 * ```
 */
export const jobTools: readonly ToolDefinition[] = [jobList, jobRead, jobWait, jobKill];
