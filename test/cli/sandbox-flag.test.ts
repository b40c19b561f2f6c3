import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { approveFlag, sandboxFlag } from '../../src/cli/sandbox-flag.js';
import { UsageError } from '../../src/cli/usage.js';

const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

describe('--sandbox and --approve flags (A5)', () => {
  it('A5: --sandbox MODE becomes the runtime sandbox option; absent means none', () => {
    expect(sandboxFlag(undefined, 'run')).toEqual({});
    expect(sandboxFlag('workspace-write', 'run')).toEqual({ sandbox: { mode: 'workspace-write' } });
    expect(() => sandboxFlag('strict', 'run')).toThrow(UsageError);
    expect(approveFlag('elicit')).toEqual({ approve: 'elicit' });
    expect(() => approveFlag('yes')).toThrow(/--approve takes one of elicit, allow, deny/);
  });

  it('A5: tether run --sandbox off runs the command; an unknown mode exits 2 naming the modes', () => {
    const ok = spawnSync(process.execPath, [cli, 'run', '--sandbox', 'off', '--', 'echo sandboxed-off'], {
      encoding: 'utf8',
    });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('sandboxed-off');
    const bad = spawnSync(process.execPath, [cli, 'run', '--sandbox', 'nope', '--', 'true'], {
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--sandbox takes one of off, read-only, workspace-write');
  });
});
