import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';
import { createToolRegistry } from '../../src/tools/tool-registry.js';
import type { ToolRegistry } from '../../src/tools/tool-types.js';
import { failed, ok } from './tool-harness.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'tether-workdir-')));
mkdirSync(join(base, 'sub', 'deeper'), { recursive: true });
afterAll(() => rmSync(base, { recursive: true, force: true }));

let rt: Runtime;
afterEach(async () => {
  await rt.dispose();
});

async function registry(persistentBash: boolean): Promise<ToolRegistry> {
  rt = await createRuntime({ cwd: base, spillDir: false, limits: { cleanupGraceMs: 200 } });
  return createToolRegistry(rt, { persistentBash });
}

describe('bash workdir', () => {
  it('M: workdir runs a one-shot command there; a relative one resolves against the runtime cwd', async () => {
    const tools = await registry(false);
    const owner = rt.owners.host().token;
    expect(ok(await tools.call(owner, 'bash', { command: 'pwd', workdir: 'sub' })).text).toMatch(
      new RegExp(`^${join(base, 'sub')}\\n`),
    );
    expect(
      ok(await tools.call(owner, 'bash', { command: 'pwd', workdir: join(base, 'sub', 'deeper') })).text,
    ).toMatch(new RegExp(`^${join(base, 'sub', 'deeper')}\\n`));
    // Without it: the runtime's cwd, whatever the previous call did.
    expect(ok(await tools.call(owner, 'bash', { command: 'pwd' })).text).toMatch(new RegExp(`^${base}\\n`));
  });

  it('M: a missing workdir is a clear error and nothing runs, in the foreground and the background', async () => {
    const tools = await registry(false);
    const owner = rt.owners.host().token;
    const marker = join(base, 'ran');
    for (const run_in_background of [false, true]) {
      const r = failed(
        await tools.call(owner, 'bash', { command: `touch ${marker}`, workdir: 'nope', run_in_background }),
        'CWD_NOT_FOUND',
      );
      expect(r.text).toContain(`workdir 'nope'`);
      expect(r.text).toContain(join(base, 'nope'));
      expect(r.text).not.toMatch(/cwd|owner|list\(\)/);
    }
    expect(await rt.jobs.list(owner)).toEqual([]);
    expect(ok(await tools.call(owner, 'bash', { command: `test -e ${marker} || echo absent` })).text).toMatch(
      /^absent\n/,
    );
  });

  it('M: with persistent bash, workdir is cd there first and the session stays; a missing one runs nothing', async () => {
    const tools = await registry(true);
    const owner = rt.owners.host().token;
    expect(ok(await tools.call(owner, 'bash', { command: 'pwd', workdir: 'sub' })).text).toMatch(
      new RegExp(`^${join(base, 'sub')}\\n`),
    );
    expect(ok(await tools.call(owner, 'bash', { command: 'cd deeper && pwd' })).text).toMatch(
      new RegExp(`^${join(base, 'sub', 'deeper')}\\n`),
    );
    const r = failed(
      await tools.call(owner, 'bash', { command: 'echo ran', workdir: 'nope' }),
      'CWD_NOT_FOUND',
    );
    expect(r.text).toContain(`workdir 'nope'`);
    expect(r.text).not.toContain('ran\n');
    // The session did not move.
    expect(ok(await tools.call(owner, 'bash', { command: 'pwd' })).text).toMatch(
      new RegExp(`^${join(base, 'sub', 'deeper')}\\n`),
    );
  });
});
