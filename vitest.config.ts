import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
  },
});
