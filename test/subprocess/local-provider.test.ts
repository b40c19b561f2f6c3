import { afterEach, describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { createLocalProvider, type LocalProvider } from '../../src/subprocess/local-provider.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import type { TerminalHandle } from '../../src/subprocess/types.js';

let provider: LocalProvider | null = null;
afterEach(async () => {
  await provider?.dispose();
  provider = null;
});

// Collects a terminal's output until `pattern` shows (or the session ends).
async function outputUntil(handle: TerminalHandle, pattern: RegExp): Promise<string> {
  let seen = '';
  return new Promise((resolve) => {
    const stop = handle.onData((text) => {
      seen += text;
      if (pattern.test(seen)) {
        stop();
        resolve(seen);
      }
    });
    void handle.exited.then(() => resolve(seen));
  });
}

describe('local provider: spawnTerminal (S2)', () => {
  it('S2, S3: runs argv on a PTY with the sanitized env plus the overlay, and its kill proves the tree gone', async () => {
    process.env.TETHER_TEST_API_KEY = 'sk-secret';
    try {
      provider = createLocalProvider();
      expect(provider.workers).toBe(0); // no thread before the first terminal
      const handle = await provider.spawnTerminal({
        argv: [
          '/bin/bash',
          '--norc',
          '--noprofile',
          '-c',
          'echo "[$X|$TETHER_TEST_API_KEY|$(tty)]"; sleep 1000',
        ],
        cwd: '/tmp',
        cols: 80,
        rows: 24,
        cleanupGraceMs: 200,
        env: { X: 'overlay' },
      });
      expect(provider.workers).toBe(1);
      const seen = await outputUntil(handle, /\]/);
      expect(seen).toContain(`[overlay||${handle.ttyPath}]`);
      expect(listTaggedProcesses(handle.treeId).length).toBeGreaterThan(0);
      expect(await handle.kill()).toMatchObject({ status: 'quiescent' });
      expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
      await provider.dispose();
      expect(provider.workers).toBe(0); // D3: the PTY worker stopped with the provider
    } finally {
      delete process.env.TETHER_TEST_API_KEY;
    }
  });

  it('S1: a missing cwd is CWD_NOT_FOUND and an aborted signal ABORTED, before anything starts', async () => {
    provider = createLocalProvider();
    const spec = {
      argv: ['/bin/bash'] as [string],
      cwd: '/nonexistent/tether',
      cols: 80,
      rows: 24,
      cleanupGraceMs: 100,
    };
    const code = (err: unknown) => (err instanceof TetherError ? err.code : String(err));
    expect(code(await provider.spawnTerminal(spec).catch((e: unknown) => e))).toBe('CWD_NOT_FOUND');
    const signal = AbortSignal.abort();
    expect(code(await provider.spawnTerminal({ ...spec, cwd: '/', signal }).catch((e: unknown) => e))).toBe(
      'ABORTED',
    );
    expect(provider.workers).toBe(0);
  });
});
