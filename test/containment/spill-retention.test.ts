import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime } from '../../src/index.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function spillRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tether-spill-retention-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// 20,000 bytes of output: past a 200-char cap, so it spills.
const BIG = 'head -c 20000 /dev/zero | tr "\\0" x';

describe('spill retention', () => {
  it("K4: a spill lives in the runtime's own spill dir and is removed on dispose; the result then says so", async () => {
    const root = spillRoot();
    const rt = await createRuntime({ spillDir: root, limits: { outputCapChars: 200 } });
    const result = await rt.shell.run({ command: BIG });
    const path = result.spillPath!;
    expect(existsSync(path)).toBe(true);
    expect(dirname(path)).not.toBe(root); // below it, in the runtime's own directory
    expect(rt.stats().spills).toEqual({ files: 1, bytes: 20_000 });
    await rt.dispose();
    expect(existsSync(path)).toBe(false);
    expect(existsSync(dirname(path))).toBe(false);
    expect(result.spillPath).toBeUndefined();
    expect(result.spillRemoved).toBe('disposed');
    expect(rt.stats().spills).toEqual({ files: 0, bytes: 0 });
  });

  it('K4: keepSpill keeps the file after dispose (in the spill root), and the marker line names it', async () => {
    const root = spillRoot();
    const rt = await createRuntime({ spillDir: root, limits: { outputCapChars: 200 } });
    const result = await rt.shell.run({ command: BIG, keepSpill: true });
    await rt.dispose();
    expect(dirname(result.spillPath!)).toBe(root);
    expect(existsSync(result.spillPath!)).toBe(true);
    expect(result.output).toContain(`full output: ${result.spillPath}`);
    expect(readdirSync(root)).toEqual([result.spillPath!.slice(root.length + 1)]);
  });

  it('K4: limits.spillBudgetBytes removes the oldest spills first, and their results say budget', async () => {
    const root = spillRoot();
    const rt = await createRuntime({
      spillDir: root,
      limits: { outputCapChars: 200, spillBudgetBytes: 50_000 },
    });
    cleanups.push(() => rt.dispose());
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await rt.shell.run({ command: BIG }));
    // 4 x 20,000 bytes against 50,000: the two oldest went, the two newest stay.
    expect(results.map((r) => r.spillRemoved ?? 'kept')).toEqual(['budget', 'budget', 'kept', 'kept']);
    expect(results.map((r) => r.spillPath !== undefined && existsSync(r.spillPath))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    expect(rt.stats().spills).toEqual({ files: 2, bytes: 40_000 });
  });
});
