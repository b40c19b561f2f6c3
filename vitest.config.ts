import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

// Files whose marker-mode sweeps judge look-alike escapees (no marker, own session, orphaned)
// machine-wide: a dead runtime's recovery and direct killProcessTree calls. Another file's
// `setsid env -i` escapee, started meanwhile, would be theirs; they run after the others, one
// at a time (issue 33.5).
const ALONE = [
  'test/containment/**/*.test.ts',
  'test/subprocess/tree-kill.test.ts',
  'test/cli/run-command.test.ts',
  'test/observe/recovery-fact.test.ts',
  'test/mirror/mirror-cli.test.ts',
];

export default defineConfig({
  test: {
    // node-pty is not safe in worker threads: every test file runs in its own child process.
    pool: 'forks',
    // Memory-bound tests call gc() to measure live memory, not garbage.
    execArgv: ['--expose-gc'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ['test/support/setup.ts'],
    // CI also writes a JSON summary that .ci/run turns into one 'N passed, N failed' line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'files',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          // A test file mostly waits on real processes (grace periods, PTYs, sshd, chromium),
          // not on the CPU: vitest's default (cores - 1) ran the files one at a time on 2 cores,
          // 380 s wall for 316 s of tests. One fork per core, at least two (issue 33.5).
          maxWorkers: Math.max(2, availableParallelism()),
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
