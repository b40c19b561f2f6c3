import { afterEach, describe, expect, it } from 'vitest';
import { failsWith, type JobHarness, jobHarness, readAll, settle } from '../support/job-harness.js';
import { processJob } from '../support/process-job.js';

let h: JobHarness;
afterEach(async () => {
  await h?.close();
});

const expectedLines = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');

describe('jobs.read', () => {
  it('J5: reading while running and after the end use the same channel, without duplicates or gaps', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(
      owner,
      processJob('i=1; while [ $i -le 60 ]; do echo "line $i"; i=$((i+1)); sleep 0.005; done').spec,
    );
    let text = '';
    let cursor = 0;
    let pages = 0;
    // Read in small pages while it runs, then keep going after it ended.
    for (;;) {
      const page = await h.jobs.read(owner, info.id, cursor, 7);
      expect(page.lossy).toBe(false);
      text += page.text;
      cursor = page.cursor;
      pages++;
      if (page.done) break;
      if (page.text === '') await h.jobs.wait(owner, info.id, 10);
    }
    expect(text).toBe(expectedLines(60));
    expect(pages).toBeGreaterThan(60);
    // After done, the channel stays at its end.
    expect(await h.jobs.read(owner, info.id, cursor)).toEqual({
      text: '',
      cursor,
      lossy: false,
      dropped: 0,
      done: true,
    });
  });

  it('J5: 1 MiB+ of output with a small retention gives lossy pages; text + dropped is exactly what was printed', async () => {
    h = jobHarness({ retentionChars: 64 * 1024 });
    const owner = h.owners.host().token;
    const total = 1_500_000;
    const info = await h.jobs.start(
      owner,
      processJob(`head -c ${total} /dev/zero | tr '\\0' x; printf END`).spec,
    );
    // Read after the end: everything but the last 64 KiB was dropped.
    await settle(h.jobs, owner, info.id);
    const first = await h.jobs.read(owner, info.id, 0, 1000);
    expect(first).toMatchObject({
      lossy: true,
      dropped: total + 3 - 64 * 1024,
      cursor: total + 3 - 64 * 1024 + 1000,
    });
    const rest = await readAll(h.jobs, owner, info.id, 10_000, first.cursor);
    expect(rest.dropped).toBe(0);
    expect(first.text.length + first.dropped + rest.text.length + rest.dropped).toBe(total + 3);
    expect(rest.text.endsWith('xEND')).toBe(true);
  });

  it('J5: a reader racing a fast 1 MiB+ writer: text + dropped adds up exactly, with a per-job cap', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const total = 2 * 1024 * 1024;
    const info = await h.jobs.start(owner, {
      ...processJob(`head -c ${total} /dev/zero | tr '\\0' y`).spec,
      outputCap: 10_000,
    });
    const { text, dropped } = await readAll(h.jobs, owner, info.id, 3000);
    expect(text.length + dropped).toBe(total);
    // Whether the reader kept up depends on scheduling; the accounting never does.
    expect(text).toBe('y'.repeat(text.length));
  });

  it('J5: a cursor from the past reads on from the oldest retained character and reports the gap', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('printf 0123456789').spec);
    await settle(h.jobs, owner, info.id);
    expect(await h.jobs.read(owner, info.id, 0, 4)).toMatchObject({ text: '0123', cursor: 4, dropped: 0 });
    // Re-reading from 0: the first 4 were consumed, so they are reported as dropped, never repeated.
    expect(await h.jobs.read(owner, info.id, 0, 100)).toEqual({
      text: '456789',
      cursor: 10,
      lossy: true,
      dropped: 4,
      done: true,
    });
  });

  it('J5: a cursor from the future is INVALID_ARGUMENT with both numbers in the message', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('printf abc').spec);
    await settle(h.jobs, owner, info.id);
    expect(await failsWith(h.jobs.read(owner, info.id, 99), 'INVALID_ARGUMENT')).toContain(
      'cursor 99 is beyond the end 3',
    );
  });

  it('J5: bad cursors and page sizes are INVALID_ARGUMENT', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob('exit 0').spec);
    for (const cursor of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '0' as unknown as number]) {
      expect(await failsWith(h.jobs.read(owner, info.id, cursor), 'INVALID_ARGUMENT')).toContain('cursor');
    }
    for (const maxChars of [0, -5, 2.5, Number.NaN]) {
      expect(await failsWith(h.jobs.read(owner, info.id, 0, maxChars), 'INVALID_ARGUMENT')).toContain(
        'maxChars',
      );
    }
    await settle(h.jobs, owner, info.id);
  });

  it('J5: the default page is 32 000 characters', async () => {
    h = jobHarness();
    const owner = h.owners.host().token;
    const info = await h.jobs.start(owner, processJob(`head -c 40000 /dev/zero | tr '\\0' z`).spec);
    await settle(h.jobs, owner, info.id);
    const page = await h.jobs.read(owner, info.id, 0);
    expect(page).toMatchObject({ cursor: 32_000, done: false, lossy: false });
    expect((await h.jobs.read(owner, info.id, page.cursor)).text).toHaveLength(8000);
  });

  it('J5: finished jobs of one owner share a retention budget; the oldest lose their oldest output first, facts stay', async () => {
    h = jobHarness({ finishedRetentionCharsPerOwner: 1_000 });
    const [owner, other] = [h.owners.host().token, h.owners.host().token];
    const print = (tag: string) => processJob(`printf '${tag}%.0s' $(seq 1 600)`).spec; // 600 chars
    const ids: string[] = [];
    for (const tag of ['a', 'b', 'c']) {
      const info = await h.jobs.start(owner, print(tag));
      await settle(h.jobs, owner, info.id);
      ids.push(info.id);
    }
    const others = await h.jobs.start(other, print('z'));
    await settle(h.jobs, other, others.id);
    const [a, b, c] = await Promise.all(ids.map((id) => h.jobs.read(owner, id, 0, 10_000)));
    // 1,800 finished chars over a 1,000 budget: a lost all 600, b its first 200, c nothing.
    expect(a).toMatchObject({ text: '', dropped: 600, lossy: true, done: true });
    expect(b).toMatchObject({ text: 'b'.repeat(400), dropped: 200, lossy: true, done: true });
    expect(c).toMatchObject({ text: 'c'.repeat(600), dropped: 0, lossy: false, done: true });
    // Another owner's budget is its own; every job's facts are still listed.
    expect((await h.jobs.read(other, others.id, 0, 10_000)).text).toBe('z'.repeat(600));
    expect((await h.jobs.list(owner)).map((j) => [j.id, j.state, j.exitCode])).toEqual(
      ids.map((id) => [id, 'succeeded', 0]),
    );
  });
});
