import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';

// G: what a result publishes as a durable fact (its spill) is trustworthy, or not published.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-g-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('guarantee matrix: published spills', () => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await createRuntime({ spillDir: join(dir, 'spill'), limits: { outputCapChars: 1_000 } });
  });
  afterAll(async () => {
    await rt.dispose();
  });

  it('G, C2: a published spillPath holds every byte the command wrote (full unicode, invalid bytes too)', async () => {
    // Graphemes of every plane, lone surrogates' UTF-8 lookalikes and raw invalid bytes.
    const samples = fc.sample(
      fc.tuple(
        fc.string({ unit: 'grapheme', minLength: 2_000, maxLength: 4_000 }),
        fc.uint8Array({ maxLength: 64 }),
      ),
      { numRuns: 3, seed: 12 },
    );
    for (const [textPart, raw] of samples) {
      const source = join(dir, 'source.bin');
      const bytes = Buffer.concat([Buffer.from(textPart), Buffer.from(raw), Buffer.from(textPart)]);
      writeFileSync(source, bytes);
      const result = await rt.shell.run({ command: `cat ${source}` });
      expect(result.truncated).toBe(true);
      expect(result.spillPath).toBeDefined();
      expect(readFileSync(result.spillPath!).equals(bytes)).toBe(true);
    }
  });
});

describe('guarantee matrix: a spill that failed', () => {
  it('G, C2: when the spill cannot be written, no spillPath is published and the tail is still there', async () => {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const rt = await createRuntime({ spillDir: join(file, 'spill'), limits: { outputCapChars: 1_000 } });
    try {
      const result = await rt.shell.run({ command: 'seq 1 20000' });
      expect(result.exitCode).toBe(0);
      expect(result.truncated).toBe(true);
      expect(result.spillPath).toBeUndefined();
      expect(result.output).not.toContain(join(file, 'spill'));
      expect(result.output.endsWith('19999\n20000\n')).toBe(true);
    } finally {
      await rt.dispose();
    }
  });
});

describe('guarantee matrix: durable spills', () => {
  it('G, C2: `spill: { durable: true }` publishes the complete spill; a durable that is not a boolean is INVALID_ARGUMENT', async () => {
    const rt = await createRuntime({
      spillDir: join(dir, 'durable'),
      spill: { durable: true },
      limits: { outputCapChars: 1_000 },
    });
    try {
      const result = await rt.shell.run({ command: 'seq 1 20000' });
      const expected = `${Array.from({ length: 20_000 }, (_, i) => i + 1).join('\n')}\n`;
      expect(readFileSync(result.spillPath!, 'utf8')).toBe(expected);
    } finally {
      await rt.dispose();
    }
    const err = await createRuntime({ spill: { durable: 'yes' as unknown as boolean } }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('spill.durable'),
    });
  });
});
