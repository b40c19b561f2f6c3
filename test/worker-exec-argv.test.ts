import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { workerExecArgv } from '../src/worker-exec-argv.js';

const entry = fileURLToPath(new URL('../dist/src/index.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'tether-flags-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// What a host program started as `node --input-type=module -e …` does with the runtime.
const EMBEDDED = `
import { existsSync, readFileSync } from 'node:fs';
const { createRuntime } = await import(${JSON.stringify(entry)});
const rt = await createRuntime({ spillDir: ${JSON.stringify(join(scratch, 'spill'))}, limits: { outputCapChars: 200 } });
const lease = rt.owners.host();
const t = await rt.terminals.open(lease.token);
const executed = await rt.terminals.execute(lease.token, t.id, 'echo "in a pty: $((6 * 7))"');
const spilled = await rt.shell.run({ command: 'seq 1 5000' });
const spill = spilled.spillPath && existsSync(spilled.spillPath) ? readFileSync(spilled.spillPath, 'utf8') : '';
const persistent = await rt.persistentBash.run(lease.token, 'echo persistent');
await rt.dispose();
console.log(JSON.stringify({
  executed: executed.output, persistent: persistent.output,
  truncated: spilled.truncated, spillLines: spill.split('\\n').length - 1, workers: rt.stats().workers,
}));
`;

describe('worker execArgv', () => {
  it('R: a host run as `node --input-type=module -e` opens a terminal, executes, spills and exits 0', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', EMBEDDED], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      executed: 'in a pty: 42\n',
      persistent: 'persistent\n',
      truncated: true,
      spillLines: 5000,
      workers: 0,
    });
  });

  it('R: a PTY worker that cannot start fails the open with SPAWN_FAILED, never "open again"', () => {
    // A preload the worker keeps (--import) that refuses to run off the main thread.
    const preload = join(scratch, 'no-workers.mjs');
    writeFileSync(
      preload,
      "import { isMainThread } from 'node:worker_threads';\nif (!isMainThread) throw new Error('no workers here');\n",
    );
    const script = `
      const { createRuntime } = await import(${JSON.stringify(entry)});
      const rt = await createRuntime({ spillDir: false });
      const lease = rt.owners.host();
      const errs = [];
      for (let i = 0; i < 2; i++) errs.push(await rt.terminals.open(lease.token).catch((e) => e));
      const bash = await rt.persistentBash.run(lease.token, 'true').catch((e) => e);
      await rt.dispose();
      console.log(JSON.stringify([...errs, bash].map((e) => ({ code: e.code, message: e.message }))));
    `;
    const r = spawnSync(process.execPath, ['--import', preload, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    const errors = JSON.parse(r.stdout) as { code: string; message: string }[];
    expect(errors).toHaveLength(3);
    for (const { code, message } of errors) {
      expect(code).toBe('SPAWN_FAILED');
      expect(message).toContain('the PTY host worker could not start');
      expect(message).toContain('no workers here');
      expect(message).not.toMatch(/open again/);
    }
  });

  it('keeps loaders, conditions and warning flags; drops eval, print, input-type, test, watch and V8 flags', () => {
    expect(
      workerExecArgv([
        '--input-type=module',
        '-e',
        '--import=evil',
        '--import',
        'tsx',
        '--require=./pnp.cjs',
        '-r',
        './setup.cjs',
        '--experimental-loader',
        './loader.mjs',
        '--conditions=development',
        '--expose-gc',
        '--max-old-space-size=4096',
        '--stack-size=2000',
        '--enable-source-maps',
        '--test',
        '--test-name-pattern',
        'x',
        '--watch',
        '--watch-path=./src',
        '-p',
        '1',
        '--print=2',
        '--eval=3',
        '--check',
        '--title=host',
        '--no-warnings',
        '--unhandled-rejections=strict',
      ]),
    ).toEqual([
      '--import',
      'tsx',
      '--require=./pnp.cjs',
      '-r',
      './setup.cjs',
      '--experimental-loader',
      './loader.mjs',
      '--conditions=development',
      '--enable-source-maps',
      '--no-warnings',
      '--unhandled-rejections=strict',
    ]);
    expect(workerExecArgv([])).toEqual([]);
  });
});
