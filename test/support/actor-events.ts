/**
 * The events an invoked actor's settlement sends its parent machine, for graph tests that
 * step a machine with `transition` (where no child actually runs).
 *
 * @example
 * ```ts
 * const delivered = actorDone<RouterEvent>('deliver');
 * const [next] = transition(completionRouterMachine, snapshot, delivered);
 * ```
 */
export function actorDone<E>(actorId: string, output?: unknown): E {
  return { type: `xstate.done.actor.${actorId}`, actorId, output } as unknown as E;
}

/** The event of an invoked actor that threw or rejected with `error` (see {@link actorDone}). */
export function actorFailed<E>(actorId: string, error: unknown): E {
  return { type: `xstate.error.actor.${actorId}`, actorId, error } as unknown as E;
}
