import { assign, fromPromise, setup, stateIn } from 'xstate';

/**
 * How a producer's work ended: what its `done` promise resolves with (SPEC J1). `error` is
 * set when the producer itself failed (not the process it ran).
 */
export interface JobExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly error?: string | null;
}

/** What a job actor is started with: serializable facts only, never hooks or tokens (O1). */
export interface JobMachineInput {
  readonly jobId: string;
  /** The owner's registry key (`o1`…), a label; the token itself never enters a machine. */
  readonly ownerKey: string;
  readonly kind: string;
  readonly label: string;
  readonly startedAt: number;
}

/** The job's facts. Its lifecycle is the snapshot's state value, not a field here. */
export interface JobMachineContext extends JobMachineInput {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly error: string | null;
  readonly endedAt: number | null;
}

/** `CANCEL` asks the producer to stop (J2: visible as `running.cancelRequested`). */
export type JobMachineEvent = { readonly type: 'CANCEL' };

// Text of whatever a producer rejected with; a job's error is always a readable string.
function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' ? error : `producer failed: ${String(error)}`;
}

/**
 * One background job's lifecycle (SPEC J2): `running` (sub-states `active` and the visible
 * `cancelRequested`) → `succeeded` | `failed` | `killed`, all three final.
 *
 * - The producer's `done` promise is the invoked `producer` actor; `src/jobs` provides it.
 * - Settling while `cancelRequested` is `killed`, whatever the exit code: the job stopped
 *   because it was asked to. Otherwise exit code 0 with no signal and no error is
 *   `succeeded`, anything else `failed` (an external signal is a failure, not a kill).
 * - Effects are named and provided from `src/`: `requestCancel` calls the producer's cancel
 *   hook (J7), `stampEnd` records the end time. The machine does no I/O and reads no clock.
 *
 * @example
 * ```ts
 * const actor = createActor(jobMachine.provide({ actors: { producer } }), { input }).start();
 * actor.send({ type: 'CANCEL' });
 * actor.getSnapshot().matches({ running: 'cancelRequested' }); // true until done settles
 * ```
 */
export const jobMachine = setup({
  types: {
    context: {} as JobMachineContext,
    input: {} as JobMachineInput,
    events: {} as JobMachineEvent,
    output: {} as { readonly jobId: string; readonly ownerKey: string },
  },
  actors: {
    producer: fromPromise<JobExit, { readonly jobId: string }>(() =>
      Promise.reject(new Error('machines/job: the producer actor was not provided')),
    ),
  },
  actions: {
    requestCancel: () => {},
    stampEnd: assign({ endedAt: ({ context }) => context.endedAt }),
    recordExit: assign((_, exit: JobExit) => ({
      exitCode: exit.exitCode,
      signal: exit.signal,
      error: exit.error ?? null,
    })),
    recordError: assign((_, params: { readonly error: unknown }) => ({
      exitCode: null,
      signal: null,
      error: errorText(params.error),
    })),
  },
  guards: {
    exitedCleanly: (_, exit: JobExit) => exit.exitCode === 0 && exit.signal === null && !exit.error,
    cancelWasRequested: stateIn({ running: 'cancelRequested' }),
  },
}).createMachine({
  id: 'job',
  context: ({ input }) => ({ ...input, exitCode: null, signal: null, error: null, endedAt: null }),
  initial: 'running',
  states: {
    running: {
      initial: 'active',
      invoke: {
        id: 'producer',
        src: 'producer',
        input: ({ context }) => ({ jobId: context.jobId }),
        onDone: [
          {
            guard: 'cancelWasRequested',
            target: 'killed',
            actions: [{ type: 'recordExit', params: ({ event }) => event.output }, 'stampEnd'],
          },
          {
            guard: { type: 'exitedCleanly', params: ({ event }) => event.output },
            target: 'succeeded',
            actions: [{ type: 'recordExit', params: ({ event }) => event.output }, 'stampEnd'],
          },
          {
            target: 'failed',
            actions: [{ type: 'recordExit', params: ({ event }) => event.output }, 'stampEnd'],
          },
        ],
        // `done` must never reject (J1); if it does, the job fails with the error's text.
        onError: [
          {
            guard: 'cancelWasRequested',
            target: 'killed',
            actions: [{ type: 'recordError', params: ({ event }) => ({ error: event.error }) }, 'stampEnd'],
          },
          {
            target: 'failed',
            actions: [{ type: 'recordError', params: ({ event }) => ({ error: event.error }) }, 'stampEnd'],
          },
        ],
      },
      states: {
        active: { on: { CANCEL: 'cancelRequested' } },
        cancelRequested: { entry: 'requestCancel' },
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
    killed: { type: 'final' },
  },
  output: ({ context }) => ({ jobId: context.jobId, ownerKey: context.ownerKey }),
});
