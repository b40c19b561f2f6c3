import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';

let rt: Runtime;
afterEach(async () => {
  await rt?.dispose();
});

const MiB = 1_048_576;

// Reads a job to its end in pages; what it got and what the pages said was dropped (J5).
async function drain(owner: Parameters<Runtime['jobs']['read']>[0], jobId: string, pageChars: number) {
  let text = '';
  let dropped = 0;
  for (let cursor = 0; ; ) {
    const page = await rt.jobs.read(owner, jobId, cursor, pageChars);
    text += page.text;
    dropped += page.dropped;
    cursor = page.cursor;
    if (page.done) return { text, dropped, cursor };
    if (page.text.length === 0) await rt.jobs.wait(owner, jobId, 50);
  }
}

describe('job floods (issue 30.6)', () => {
  it('J5: 16 floods at once, two owners: every job’s chars + dropped is exactly what it printed, and what was read is its tail', async () => {
    rt = await createRuntime({ spillDir: false, limits: { jobRetentionChars: MiB } });
    const leases = [rt.owners.host(), rt.owners.host()];
    const bytes = 3 * MiB;
    // Each job prints its own letter, so a byte that landed in another job's output shows.
    const letters = 'abcdefghijklmnop';
    const jobs = await Promise.all(
      [...letters].map(async (letter, i) => {
        const owner = leases[i % 2]!.token;
        const info = await rt.shell.background(owner, {
          command: `head -c ${bytes} /dev/zero | tr '\\0' ${letter}`,
        });
        return { owner, id: info.id, letter };
      }),
    );
    const results = await Promise.all(jobs.map((j) => drain(j.owner, j.id, 65_536)));
    results.forEach((r, i) => {
      expect(r.text.length + r.dropped).toBe(bytes);
      expect(r.cursor).toBe(bytes);
      expect(r.text === jobs[i]!.letter.repeat(r.text.length)).toBe(true);
    });
  });

  it('J5: a character stdout splits across two reads stays whole when stderr writes in between (each stream decodes on its own)', async () => {
    rt = await createRuntime({ spillDir: false });
    const owner = rt.owners.host().token;
    // é is c3 a9: its first byte, then stderr's line, then (a read later) its second byte.
    const command = `printf '\\303'; sleep 0.2; echo err >&2; sleep 0.2; printf '\\251\\n'`;
    const { id } = await rt.shell.background(owner, { command });
    const { text } = await drain(owner, id, 65_536);
    expect(text).not.toContain('\uFFFD');
    expect(text).toContain('err\n');
    expect(text.replace('err\n', '')).toBe('é\n');
  });

  it('J5: a flood read at once after it ended is exact, line for line, across slabs and pages', async () => {
    rt = await createRuntime({ spillDir: false, limits: { jobRetentionChars: 8 * MiB } });
    const owner = rt.owners.host().token;
    const lines = 200_000; // 'line N\n' for N = 1..200000: 1,888,895 bytes
    const info = await rt.shell.background(owner, { command: `seq 1 ${lines} | sed 's/^/line /'` });
    expect(await rt.jobs.wait(owner, info.id, 60_000)).toBe(true);
    const expected = Array.from({ length: lines }, (_, i) => `line ${i + 1}\n`).join('');
    const { text, dropped } = await drain(owner, info.id, 100_003);
    expect(dropped).toBe(0);
    expect(text.length).toBe(expected.length);
    expect(text === expected).toBe(true);
  });

  it('J5: a reader that never yields still gets every byte, pages resolving across turns', async () => {
    rt = await createRuntime({ spillDir: false, limits: { jobRetentionChars: 16 * MiB } });
    const owner = rt.owners.host().token;
    const bytes = 6 * MiB;
    const info = await rt.shell.background(owner, { command: `head -c ${bytes} /dev/zero | tr '\\0' z` });
    expect(await rt.jobs.wait(owner, info.id, 60_000)).toBe(true);
    // Tiny pages, back to back: more than a turn's read budget, so some reads wait for a turn.
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns++;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const { text, dropped } = await drain(owner, info.id, 4_096);
    counting = false;
    expect(dropped).toBe(0);
    expect(text.length).toBe(bytes);
    expect(text === 'z'.repeat(bytes)).toBe(true);
    expect(turns).toBeGreaterThan(1);
  });
});
