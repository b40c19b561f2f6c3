import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const consumer = mkdtempSync(join(tmpdir(), 'tether-consumer-'));
afterAll(() => rmSync(consumer, { recursive: true, force: true }));

describe('the package', () => {
  it('R: a consumer in another folder imports createRuntime and TetherError from "tether-runtime"', () => {
    mkdirSync(join(consumer, 'node_modules'));
    symlinkSync(root, join(consumer, 'node_modules', 'tether-runtime'));
    writeFileSync(
      join(consumer, 'main.mjs'),
      `import { createRuntime, TetherError } from 'tether-runtime';
       const rt = await createRuntime();
       const r = await rt.shell.run({ command: 'echo from-consumer' });
       const err = await rt.shell.run({ command: 'true', cwd: '/nope' }).catch((e) => e);
       await rt.dispose();
       console.log(JSON.stringify({ output: r.output, isTetherError: err instanceof TetherError, code: err.code }));`,
    );
    const r = spawnSync(process.execPath, ['main.mjs'], { cwd: consumer, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      output: 'from-consumer\n',
      isTetherError: true,
      code: 'CWD_NOT_FOUND',
    });
  });
});
