import { expect } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createJobService, type JobServiceOptions } from '../../src/jobs/job-service.js';
import type { JobInfo, JobService } from '../../src/jobs/job-types.js';
import { createOwnerRegistry, type OwnerRegistry } from '../../src/owners/owner-registry.js';

export interface JobHarness {
  readonly owners: OwnerRegistry;
  readonly jobs: JobService;
  /** Hook failures the service reported (instead of process warnings). */
  readonly errors: { error: unknown; jobId: string; hook: string }[];
  /** Disposes the service and asserts quiescence (D3). */
  close(): Promise<void>;
}

// A job service over a fresh owner registry, with hook failures captured for assertions.
export function jobHarness(options: Omit<JobServiceOptions, 'owners'> = {}): JobHarness {
  const owners = createOwnerRegistry();
  const errors: JobHarness['errors'] = [];
  const jobs = createJobService({
    owners,
    onError: (error, where) => errors.push({ error, ...where }),
    ...options,
  });
  return {
    owners,
    jobs,
    errors,
    async close() {
      await jobs.dispose();
      expect(jobs.stats()).toMatchObject({ running: 0, starting: 0, waiters: 0, timers: 0, deliveries: 0 });
    },
  };
}

/** Waits (without a deadline of its own) until the job is terminal and returns its info. */
export async function settle(
  jobs: JobService,
  owner: Parameters<JobService['list']>[0],
  id: string,
): Promise<JobInfo> {
  while (!(await jobs.wait(owner, id, 30_000))) {}
  const info = (await jobs.list(owner)).find((j) => j.id === id);
  if (!info) throw new Error(`job ${id} vanished`);
  return info;
}

/** Reads a job's output to the end (following cursors), as text plus dropped count. */
export async function readAll(
  jobs: JobService,
  owner: Parameters<JobService['list']>[0],
  id: string,
  maxChars = 32_000,
  from = 0,
): Promise<{ text: string; dropped: number; pages: number }> {
  let cursor = from;
  let text = '';
  let dropped = 0;
  let pages = 0;
  for (;;) {
    const page = await jobs.read(owner, id, cursor, maxChars);
    pages++;
    text += page.text;
    dropped += page.dropped;
    cursor = page.cursor;
    if (page.done) return { text, dropped, pages };
    if (page.text.length === 0) await jobs.wait(owner, id, 20);
  }
}

/** Asserts that `promise` rejects (or `fn` throws) with a TetherError of `code`; returns its message. */
export async function failsWith(promise: Promise<unknown> | (() => unknown), code: string): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(TetherError);
    expect((err as TetherError).code, (err as Error).message).toBe(code);
    return (err as Error).message;
  }
  throw new Error(`expected a TetherError ${code}, but nothing was thrown`);
}
