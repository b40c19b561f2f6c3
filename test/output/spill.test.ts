import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createSpillPool, type SpillPool, type SpillPoolOptions } from '../../src/output/spill.js';
import { workerUrl } from '../../src/worker-url.js';

const run = promisify(execFile);
const TEMP = /^\.[0-9a-f]+\.spill\.tmp$/;
const LOG = /^[0-9a-f]+\.log$/;
const hasProc = existsSync('/proc/self/fd');
const hasPrlimit = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
const hasStrace = ['/usr/bin/strace', '/bin/strace'].find((p) => existsSync(p));
const builtSpill = fileURLToPath(new URL('../../dist/src/output/spill.js', import.meta.url));

let root: string;
let dir: string;
let pools: SpillPool[];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tether-spill-test-'));
  dir = join(root, 'nested', 'spill');
  pools = [];
});

afterEach(async () => {
  await Promise.all(pools.map((p) => p.destroy()));
  rmSync(root, { recursive: true, force: true });
});

function pool(opts: Partial<SpillPoolOptions> = {}): SpillPool {
  const p = createSpillPool({ dir, ...opts });
  pools.push(p);
  return p;
}

// Bytes that are not valid UTF-8 anywhere: lone continuation, truncated sequence, surrogate, 0xff.
function awkwardBytes(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  const poison = [0xff, 0x80, 0xc3, 0xed, 0xa0, 0x80, 0x00, 0x0a, 0xfe];
  for (let i = 0, x = seed; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = i % 7 === 0 ? poison[(x >>> 8) % poison.length]! : x >>> 24;
  }
  return out;
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

// Open fds of this process (every thread) that point into `prefix`.
function fdsUnder(prefix: string): string[] {
  return readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    })
    .filter((target) => target.startsWith(prefix));
}

describe('spill', () => {
  it('C2: many small writes of invalid UTF-8 round-trip byte for byte', async () => {
    const expected = awkwardBytes(3 * 65_536 + 123, 7);
    const writer = pool({ batchBytes: 65_536 }).open();
    // The caller reuses one buffer: the writer must have copied every chunk.
    const scratch = new Uint8Array(97);
    for (let offset = 0; offset < expected.length; ) {
      const size = Math.min(1 + (offset % 97), expected.length - offset);
      scratch.set(expected.subarray(offset, offset + size));
      writer.write(scratch.subarray(0, size));
      scratch.fill(0x2a);
      offset += size;
    }
    const outcome = await writer.finish();
    if (!('path' in outcome)) throw new Error(outcome.error);
    expect(Buffer.compare(readFileSync(outcome.path), expected)).toBe(0);
  });

  it('C2: chunks larger than a batch and an empty spill round-trip exactly', async () => {
    const p = pool({ batchBytes: 4096 });
    const big = awkwardBytes(1_000_003, 11);
    const writer = p.open();
    writer.write(big.subarray(0, 10));
    writer.write(big.subarray(10));
    const empty = p.open();
    const [a, b] = await Promise.all([writer.finish(), empty.finish()]);
    if (!('path' in a) || !('path' in b)) throw new Error('spill failed');
    expect(Buffer.compare(readFileSync(a.path), big)).toBe(0);
    expect(readFileSync(b.path).length).toBe(0);
  });

  it('C2: the path exists only after finish(), from an atomic rename of a private temp file', async () => {
    const writer = pool().open();
    writer.write(awkwardBytes(5000, 3));
    await vi.waitFor(() => expect(readdirSync(dir)).toEqual([expect.stringMatching(TEMP)]));
    const outcome = await writer.finish();
    if (!('path' in outcome)) throw new Error(outcome.error);
    expect(dirname(outcome.path)).toBe(dir);
    expect(basename(outcome.path)).toMatch(LOG);
    expect(readdirSync(dir)).toEqual([basename(outcome.path)]);
    expect(statSync(outcome.path).mode & 0o777).toBe(0o600);
    expect(await writer.finish()).toEqual(outcome);
    expect(writer.write(new Uint8Array(10))).toBe(true);
    await writer.abort();
    expect(readFileSync(outcome.path).length).toBe(5000);
  });

  it.runIf(hasPrlimit)(
    'C2: a write past RLIMIT_FSIZE gives EFBIG (not SIGXFSZ): finish() returns { error } and no file is left',
    async () => {
      const script = `
        import { readdirSync } from 'node:fs';
        const { createSpillPool } = await import(${JSON.stringify(pathToFileURL(builtSpill).href)});
        const pool = createSpillPool({ dir: ${JSON.stringify(dir)} });
        const writer = pool.open();
        const chunk = new Uint8Array(64 * 1024).fill(0x61);
        for (let i = 0; i < 16; i++) writer.write(chunk);
        const outcome = await writer.finish();
        await pool.destroy();
        console.log(JSON.stringify({ outcome, files: readdirSync(${JSON.stringify(dir)}) }));
      `;
      const { stdout } = await run(hasPrlimit!, [
        '--fsize=65536',
        process.execPath,
        '--input-type=module',
        '-e',
        script,
      ]);
      const { outcome, files } = JSON.parse(stdout) as { outcome: unknown; files: string[] };
      expect(outcome).toEqual({ error: expect.stringMatching(/^EFBIG/) });
      expect(files).toEqual([]);
    },
  );

  it.runIf(hasStrace)(
    'C2, G: a spill is published by its rename alone by default; `durable` fsyncs the file and its directory first',
    async () => {
      // Counts the fsync calls of a process that publishes one 1 MiB spill (strace -f: every thread).
      const fsyncs = async (durable: boolean): Promise<{ calls: number; size: number }> => {
        const trace = join(root, `trace-${durable}`);
        const script = `
          import { statSync } from 'node:fs';
          const { createSpillPool } = await import(${JSON.stringify(pathToFileURL(builtSpill).href)});
          const pool = createSpillPool({ dir: ${JSON.stringify(dir)}, durable: ${durable} });
          const writer = pool.open();
          for (let i = 0; i < 16; i++) writer.write(new Uint8Array(64 * 1024).fill(0x61));
          const outcome = await writer.finish();
          await pool.destroy();
          console.log(JSON.stringify({ size: statSync(outcome.path).size }));
        `;
        const { stdout } = await run(hasStrace!, [
          '-f',
          '-qq',
          '-e',
          'trace=fsync,fdatasync',
          '-o',
          trace,
          process.execPath,
          '--input-type=module',
          '-e',
          script,
        ]);
        const calls = readFileSync(trace, 'utf8')
          .split('\n')
          .filter((l) => /\bf(data)?sync\(/.test(l)).length;
        return { calls, size: (JSON.parse(stdout) as { size: number }).size };
      };
      expect(await fsyncs(false)).toEqual({ calls: 0, size: 1 << 20 });
      const durable = await fsyncs(true);
      expect(durable.size).toBe(1 << 20);
      expect(durable.calls).toBeGreaterThanOrEqual(2);
    },
  );

  it('C2: an unusable spill dir gives { error } and nothing is published', async () => {
    const file = join(root, 'not-a-dir');
    writeFileSync(file, 'x');
    const p = createSpillPool({ dir: join(file, 'spill') });
    pools.push(p);
    const writer = p.open();
    expect(writer.write(new Uint8Array(10))).toBe(true);
    expect(await writer.finish()).toEqual({ error: expect.stringMatching(/^ENOTDIR/) });
  });

  it('C2: abort() removes the temp file, before or after it was created', async () => {
    const p = pool();
    const late = p.open();
    late.write(awkwardBytes(2000, 5));
    await vi.waitFor(() => expect(readdirSync(dir)).toHaveLength(1));
    const early = p.open();
    early.write(awkwardBytes(2000, 6));
    await Promise.all([late.abort(), early.abort()]);
    expect(readdirSync(dir)).toEqual([]);
    expect(await late.finish()).toEqual({ error: 'the spill was aborted' });
  });

  it('C2: write() returns false past maxInFlightBytes, drained() resolves, and no byte is lost', async () => {
    const writer = pool({ batchBytes: 65_536, maxInFlightBytes: 262_144 }).open();
    const chunk = new Uint8Array(65_536);
    // Nothing completes synchronously, so the 5th chunk is the first over the cap.
    const accepted = [1, 2, 3, 4, 5].map((i) => writer.write(chunk.fill(i)));
    expect(accepted).toEqual([true, true, true, true, false]);
    await writer.drained();
    // Later batches reuse buffers the worker handed back: stale bytes must never leak out.
    let pauses = 0;
    for (let i = 6; i <= 64; i++) {
      if (!writer.write(chunk.fill(i).subarray(0, i === 64 ? 1000 : 65_536))) {
        pauses++;
        await writer.drained();
      }
    }
    expect(pauses).toBeGreaterThan(0);
    const outcome = await writer.finish();
    if (!('path' in outcome)) throw new Error(outcome.error);
    const expected = Buffer.alloc(63 * 65_536 + 1000);
    for (let i = 1; i <= 64; i++) expected.fill(i, (i - 1) * 65_536, Math.min(i * 65_536, expected.length));
    expect(Buffer.compare(readFileSync(outcome.path), expected)).toBe(0);
  });

  it.runIf(hasProc)('C2: destroy() aborts unfinished writers and leaves no fd or thread behind', async () => {
    const before = openFds();
    const p = createSpillPool({ dir, maxThreads: 2 });
    const done = p.open();
    const aborted = p.open();
    const unfinished = p.open();
    for (const w of [done, aborted, unfinished]) w.write(awkwardBytes(3 << 20, 9));
    const outcome = await done.finish();
    await aborted.abort();
    // Settled spills hold no fd even while their thread lives (a thread's exit would hide a leak).
    // Only `unfinished` may: a task of its own, writing its temp file right now.
    const held = fdsUnder(root);
    const unfinishedTemps = readdirSync(dir)
      .filter((name) => name.endsWith('.spill.tmp'))
      .map((name) => join(dir, name));
    expect(unfinishedTemps.length).toBeLessThanOrEqual(1);
    expect(held.filter((target) => !unfinishedTemps.includes(target))).toEqual([]);
    expect(p.threads).toBeGreaterThan(0);
    await p.destroy();
    expect(p.threads).toBe(0);
    expect(await unfinished.finish()).toEqual({ error: 'the spill pool was destroyed' });
    expect(readdirSync(dir)).toEqual(['path' in outcome ? basename(outcome.path) : 'missing']);
    expect(openFds()).toBe(before);
    expect(() => p.open()).toThrow(TetherError);
  });

  it('C2: workerUrl points at the compiled worker and refuses odd names', () => {
    expect(existsSync(fileURLToPath(workerUrl('spill-worker')))).toBe(true);
    expect(() => workerUrl('../evil')).toThrow(TetherError);
  });
});
