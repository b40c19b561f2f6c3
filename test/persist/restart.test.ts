import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { until } from '../support/waits.js';
import { crash } from './persist-child.js';
import { persistFixtures } from './persist-fixtures.js';

const { scratch, child, runtime } = persistFixtures({ jobRetentionChars: 4_194_304 });

// Every `line-<n>` of `text`, in order; the text must end at a line's end.
function numbers(text: string): number[] {
  expect(text.endsWith('\n'), 'the output ends with a whole line').toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => {
      expect(l).toMatch(/^line-\d+$/);
      return Number(l.slice(5));
    });
}

const FLOOD = 200_000;
const FLOOD_COMMAND = `i=0; while [ $i -lt ${FLOOD} ]; do i=$((i+1)); echo line-$i; done`;

describe('persisted runtime (K6)', () => {
  it('K6: SIGKILL of the host mid-flood; the next runtime adopts the job and every line arrives exactly once, its exit once', async () => {
    const stateDir = scratch();
    const old = await child({ stateDir, name: 'flood', lingerMs: 20_000, jobs: [FLOOD_COMMAND], read: true });
    const jobId = old.ready.jobs[0]!;
    await until(
      '20,000 lines read by the first runtime',
      () => old.pages.reduce((n, p) => n + p.text.length, 0),
      (n) => n > 20_000 * 8,
    );
    await crash(old);
    const before = old.pages.map((p) => p.text).join('');
    const cursor = old.pages[old.pages.length - 1]!.cursor;
    expect(before.length).toBe(cursor);

    const { rt, facts } = await runtime(stateDir, 'flood');
    const listed = await rt.resumable();
    const job = listed.find((t) => t.id === jobId);
    expect(job, JSON.stringify(listed)).toMatchObject({ kind: 'job', label: FLOOD_COMMAND, owner: 'host' });
    expect(job!.cursor).toBeLessThanOrEqual(cursor);
    const owner = rt.owners.host().token;
    const info = await rt.jobs.adopt(owner, jobId);
    expect(info.id).toBe(jobId);
    let after = '';
    for (let at = cursor; ; ) {
      const page = await rt.jobs.read(owner, jobId, at, 1_000_000);
      expect(page.dropped).toBe(0);
      after += page.text;
      at = page.cursor;
      if (page.done) break;
      if (page.text === '') await rt.jobs.wait(owner, jobId, 50);
    }
    const all = numbers(before + after);
    expect(all.length).toBe(FLOOD);
    expect(all.every((n, i) => n === i + 1)).toBe(true);
    const [ended] = await rt.jobs.list(owner);
    expect(ended).toMatchObject({ id: jobId, state: 'succeeded', exitCode: 0 });
    expect(facts.filter((f) => f.type === 'job.ended' && f.actor === `job:${jobId}`)).toHaveLength(1);
    expect(facts.some((f) => f.type === 'persist.resumed' && f.jobs === 1)).toBe(true);
    expect(facts.some((f) => f.type === 'job.adopted' && f.actor === `job:${jobId}`)).toBe(true);
    await expect(rt.jobs.adopt(owner, jobId)).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });

    await rt.dispose();
    const dir = join(stateDir, 'persist', 'flood');
    expect(existsSync(dir), 'the helper took its directory with it').toBe(false);
    expect(listTaggedProcesses('persist.flood.')).toEqual([]);
  });

  it('K6: past what the helper kept, the cursor counts the dropped text exactly (multi-byte UTF-8 included) and reads go on from it', async () => {
    const stateDir = scratch();
    const lines = 60_000;
    // 2- and 4-byte characters (one and two UTF-16 units): bytes and characters differ.
    const script = `import sys\nfor i in range(1, ${lines} + 1): sys.stdout.write("\\u00e9\\U0001F600 %d\\n" % i)\nsys.stdout.flush()`;
    const written = join(stateDir, 'written');
    const command = `python3 -c '${script}' && : > ${written}; sleep 60`;
    const old = await child({ stateDir, name: 'utf', lingerMs: 20_000, jobs: [command], retention: 65_536 });
    const jobId = old.ready.jobs[0]!;
    const expected = Array.from({ length: lines }, (_, i) => `\u00e9\u{1F600} ${i + 1}\n`).join('');
    await until('the job wrote every line (it sleeps now)', () => existsSync(written), Boolean);
    await crash(old);
    const { rt } = await runtime(stateDir, 'utf');
    const [job] = await rt.resumable();
    expect(job?.id).toBe(jobId);
    expect(job!.cursor, 'the helper dropped some of it').toBeGreaterThan(0);
    const owner = rt.owners.host().token;
    await rt.jobs.adopt(owner, jobId);
    const first = await rt.jobs.read(owner, jobId, job!.cursor, expected.length);
    expect(first.dropped).toBe(0);
    const tail = first.text;
    expect(tail.length).toBeGreaterThan(1000);
    expect(expected.slice(job!.cursor, job!.cursor + tail.length)).toBe(tail);
    expect(expected.endsWith(tail)).toBe(true);
  });
});
