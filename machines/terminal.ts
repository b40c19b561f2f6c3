import { assign, fromPromise, setup } from 'xstate';

/** Why a terminal is closing or closed: asked to (`close`), its session ended on its own, or it never opened. */
export type TerminalEndReason = 'closed' | 'session_exit' | 'open_failed';

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
  /** The PTY and its shell are up. */
  | { readonly type: 'OPENED' }
  /** The PTY could not be started: nothing is left to close. */
  | { readonly type: 'OPEN_FAILED' }
  /** A `send` or `execute` starts (T2: accepted only while idle). */
  | { readonly type: 'BEGIN'; readonly activity: 'send' | 'execute' }
  | { readonly type: 'END' }
  /** `execute` replaced a shell that did not come back (T7). */
  | { readonly type: 'SHELL_RESET' }
  | { readonly type: 'CLOSE' }
  /** The terminal's process ended by itself. */
  | { readonly type: 'SESSION_EXIT' };

// Closing and a session exit end a live terminal the same way, idle or busy (T4).
const ending = {
  CLOSE: { target: 'closing', actions: { type: 'endBecause', params: { reason: 'closed' } } },
  SESSION_EXIT: { target: 'closing', actions: { type: 'endBecause', params: { reason: 'session_exit' } } },
} as const;

/**
 * One terminal's lifecycle (SPEC T2, T4): `opening` → `idle` ⇄ `busy` (one send or execute in
 * flight) → `closing` → `closed`, and a session exit from any live state goes to `closing` too.
 * A failed open goes straight to `closed`: there is no process to sweep.
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
  initial: 'opening',
  states: {
    opening: {
      on: {
        OPENED: 'idle',
        OPEN_FAILED: { target: 'closed', actions: { type: 'endBecause', params: { reason: 'open_failed' } } },
      },
    },
    idle: {
      on: {
        ...ending,
        BEGIN: {
          target: 'busy',
          actions: { type: 'begin', params: ({ event }) => ({ activity: event.activity }) },
        },
      },
    },
    busy: {
      on: {
        ...ending,
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
  output: ({ context }) => ({ terminalId: context.terminalId, endReason: context.endReason }),
});
