import type { JobExit, JobSpec } from '../../src/jobs/job-types.js';

/**
 * A producer whose `done` the test resolves by hand: the only way to place a completion at an
 * exact microtask relative to a subscription (a race real processes cannot pin down).
 */
export function manualJob(): { spec: JobSpec; finish(exit?: JobExit): void } {
  let finish!: (exit: JobExit) => void;
  const done = new Promise<JobExit>((resolve) => {
    finish = resolve;
  });
  return {
    spec: {
      kind: 'manual',
      label: 'manual',
      run: () => ({ cancel: () => finish({ exitCode: null, signal: 'SIGTERM' }), done }),
    },
    finish: (exit = { exitCode: 0, signal: null }) => finish(exit),
  };
}
