import { assign, fromPromise, setup } from 'xstate';

/** Why a terminal is closing or closed: asked to (`close`) or its session ended on its own. */
export type TerminalEndReason = 'closed' | 'session_exit';

/** What a terminal actor is started with: serializable facts only, never tokens (O1). */
export interface TerminalMachineInput {
  readonly terminalId: string;
  readonly ownerKey: string;
}

export interface TerminalMachineContext extends TerminalMachineInput {
  /** What the busy state is doing: one `send` or one `execute` at a time (T2). */
  readonly activity: 'send' | 'execute' | null;
  readonly endReason: TerminalEndReason | null;
  /** How often `execute` had to restart the shell (T7 `shellReset`). */
  readonly resets: number;
}

export type TerminalMachineEvent =
  /** A `send` or `execute` starts (T2: accepted only while idle). */
  | { readonly type: 'BEGIN'; readonly activity: 'send' | 'execute' }
  | { readonly type: 'END' }
  /** `execute` replaced a shell that did not come back (T7). */
  | { readonly type: 'SHELL_RESET' }
  | { readonly type: 'CLOSE' }
  /** The terminal's process ended by itself. */
  | { readonly type: 'SESSION_EXIT' };

/**
 * One terminal's lifecycle (SPEC T2, T4): `idle` ⇄ `busy` (one send or execute in flight) →
 * `closing` → `closed`, and a session exit from any live state goes to `closing` too.
 *
 * - T2 is the shape of the machine: `BEGIN` is only accepted in `idle`, so
 *   `snapshot.can({ type: 'BEGIN' })` is false while busy and the service answers
 *   `TERMINAL_BUSY`.
 * - `closing` invokes the `closer` actor, provided by `src/terminals` (hang up, then the
 *   verified tree kill); `closed` is reached only when it settled (T4). The machine does no I/O.
 *
 * @example
 * ```ts
 * const actor = createActor(terminalMachine.provide({ actors: { closer } }), { input }).start();
 * actor.send({ type: 'BEGIN', activity: 'send' });
 * actor.getSnapshot().can({ type: 'BEGIN', activity: 'send' }); // false: TERMINAL_BUSY
 * ```
 */
export const terminalMachine = setup({
  types: {
    context: {} as TerminalMachineContext,
    input: {} as TerminalMachineInput,
    events: {} as TerminalMachineEvent,
    output: {} as { readonly terminalId: string; readonly endReason: TerminalEndReason | null },
  },
  actors: {
    closer: fromPromise<void, { readonly terminalId: string }>(() =>
      Promise.reject(new Error('machines/terminal: the closer actor was not provided')),
    ),
  },
  actions: {
    begin: assign((_, params: { readonly activity: 'send' | 'execute' }) => ({ activity: params.activity })),
    end: assign({ activity: null }),
    countReset: assign({ resets: ({ context }) => context.resets + 1 }),
    endBecause: assign((_, params: { readonly reason: TerminalEndReason }) => ({
      activity: null,
      endReason: params.reason,
    })),
  },
}).createMachine({
  id: 'terminal',
  context: ({ input }) => ({ ...input, activity: null, endReason: null, resets: 0 }),
  initial: 'idle',
  states: {
    idle: {
      on: {
        BEGIN: {
          target: 'busy',
          actions: { type: 'begin', params: ({ event }) => ({ activity: event.activity }) },
        },
      },
    },
    busy: {
      on: {
        END: { target: 'idle', actions: 'end' },
        SHELL_RESET: { actions: 'countReset' },
      },
    },
    closing: {
      invoke: {
        src: 'closer',
        input: ({ context }) => ({ terminalId: context.terminalId }),
        onDone: 'closed',
        // The closer reports an unkillable tree by resolving; a rejection still ends here.
        onError: 'closed',
      },
    },
    closed: { type: 'final' },
  },
  on: {
    CLOSE: {
      guard: ({ context }) => context.endReason === null,
      target: '.closing',
      actions: { type: 'endBecause', params: { reason: 'closed' } },
    },
    SESSION_EXIT: {
      guard: ({ context }) => context.endReason === null,
      target: '.closing',
      actions: { type: 'endBecause', params: { reason: 'session_exit' } },
    },
  },
  output: ({ context }) => ({ terminalId: context.terminalId, endReason: context.endReason }),
});
