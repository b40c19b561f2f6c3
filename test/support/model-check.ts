import {
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
  type AnyTransitionDefinition,
  type EventFromLogic,
  getMicrosteps,
  initialTransition,
  type SnapshotFrom,
  transition,
} from 'xstate';

/**
 * Model checking helpers for `machines/` (issue 12): an explicit breadth-first exploration of
 * a machine's reachable states with the real `transition` (every step's successor is computed
 * from its own predecessor, never a representative), the set of transitions the machine
 * defines, and which of them a step took — so a test can assert that every edge was taken.
 */

type Snap<M extends AnyStateMachine> = SnapshotFrom<M>;
// The fields every machine snapshot has (SnapshotFrom<M> of a generic M does not show them).
const meta = (s: unknown) => s as AnyMachineSnapshot;
type Ev<M extends AnyStateMachine> = EventFromLogic<M>;

/** One explored step: `prev --event--> next`, and the machine transitions it took. */
export interface ModelStep<M extends AnyStateMachine> {
  readonly event: Ev<M>;
  readonly prev: Snap<M>;
  readonly next: Snap<M>;
  readonly edges: readonly string[];
}

/** A reachable abstract state: its first concrete snapshot and the steps that reach it from the start. */
export interface ModelState<M extends AnyStateMachine> {
  readonly key: string;
  readonly snapshot: Snap<M>;
  readonly path: readonly ModelStep<M>[];
}

export interface Exploration<M extends AnyStateMachine> {
  readonly initial: Snap<M>;
  readonly states: ReadonlyMap<string, ModelState<M>>;
  /** Every step out of every reachable state (not only the BFS tree's). */
  readonly steps: readonly ModelStep<M>[];
  /** Every machine transition some step took. */
  readonly taken: ReadonlySet<string>;
}

const edgeKey = (t: AnyTransitionDefinition): string => {
  const index = (t.source.transitions.get(t.eventType) ?? []).indexOf(t);
  return `${t.source.id} --${t.eventType || 'always'}${index > 0 ? `#${index}` : ''}--> ${
    t.target?.map((n: AnyStateNode) => n.id).join(',') ?? '(self)'
  }`;
};

/**
 * Every transition the machine defines (event, delayed, invoke done/error and eventless), one
 * key per definition: `<source id> --<event>--> <targets>`.
 *
 * @example
 * ```ts
 * expect([...definedEdges(m)].filter((e) => !exploration.taken.has(e))).toEqual([]);
 * ```
 */
export function definedEdges(machine: AnyStateMachine): Set<string> {
  const out = new Set<string>();
  const visit = (node: AnyStateNode) => {
    for (const list of node.transitions.values()) for (const t of list) out.add(edgeKey(t));
    for (const t of node.always ?? []) out.add(edgeKey(t));
    for (const child of Object.values(node.states) as AnyStateNode[]) visit(child);
  };
  visit(machine.root);
  return out;
}

const activeIds = (s: { _nodes?: AnyStateNode[] }): Set<string> =>
  new Set((s._nodes ?? []).map((n: AnyStateNode) => n.id));

/**
 * The machine transitions `event` takes from `prev`: the event's own (guards evaluated) and the
 * internal ones of the microsteps after it (an `always` or a state's `onDone` whose source was
 * active before and whose targets became active).
 *
 * @example
 * ```ts
 * takenEdges(machine, snapshot, { type: 'CLOSE' }); // ['router.routing --CLOSE--> router.closed']
 * ```
 */
export function takenEdges<M extends AnyStateMachine>(machine: M, prev: Snap<M>, event: Ev<M>): string[] {
  const own = (machine.getTransitionData(prev as never, event as never) ?? []).map(edgeKey);
  const micro = getMicrosteps(machine, prev, event).map(([s]) => s as unknown as { _nodes?: AnyStateNode[] });
  const always: string[] = [];
  for (let i = 1; i < micro.length; i++) {
    const before = activeIds(micro[i - 1]!);
    const after = activeIds(micro[i]!);
    for (const id of before) {
      const node = machine.getStateNodeById(id) as AnyStateNode;
      // Eventless transitions and the internal `xstate.done.state.*` a finished region raises.
      const internal = [
        ...(node.always ?? []),
        ...[...node.transitions.entries()].flatMap(([type, list]) =>
          type.startsWith('xstate.done.state.') ? list : [],
        ),
      ];
      for (const t of internal) {
        if ((t.target ?? []).every((n: AnyStateNode) => after.has(n.id) && !before.has(n.id)))
          always.push(edgeKey(t));
      }
    }
  }
  return [...own, ...always];
}

/**
 * Breadth-first exploration of every abstract state (`serialize`) reachable with `events(s)`,
 * each successor computed with the real `transition` from its own predecessor. Throws past
 * `maxStates` (an abstraction that does not bound the space).
 *
 * @example
 * ```ts
 * const x = explore(terminalMachine, { input, events: () => events, serialize: JSON.stringify });
 * for (const step of x.steps) checkInvariants(step);
 * ```
 */
export function explore<M extends AnyStateMachine>(
  machine: M,
  opts: {
    readonly input?: unknown;
    readonly events: (s: Snap<M>) => readonly Ev<M>[];
    readonly serialize: (s: Snap<M>) => string;
    readonly maxStates?: number;
  },
): Exploration<M> {
  const [initial] = (initialTransition as (m: M, input?: unknown) => [Snap<M>, unknown])(machine, opts.input);
  const states = new Map<string, ModelState<M>>();
  const steps: ModelStep<M>[] = [];
  const taken = new Set<string>();
  const first: ModelState<M> = { key: opts.serialize(initial), snapshot: initial, path: [] };
  states.set(first.key, first);
  const queue = [first];
  while (queue.length > 0) {
    const at = queue.shift()!;
    if (meta(at.snapshot).status !== 'active') continue;
    for (const event of opts.events(at.snapshot)) {
      const edges = takenEdges(machine, at.snapshot, event);
      const [next] = transition(machine, at.snapshot, event) as [Snap<M>, unknown];
      const step: ModelStep<M> = { event, prev: at.snapshot, next, edges };
      steps.push(step);
      for (const e of edges) taken.add(e);
      const key = opts.serialize(next);
      if (!states.has(key)) {
        const state = { key, snapshot: next, path: [...at.path, step] };
        states.set(key, state);
        queue.push(state);
        if (states.size > (opts.maxStates ?? 20_000)) {
          throw new Error(`explore: more than ${opts.maxStates ?? 20_000} states; bound the abstraction`);
        }
      }
    }
  }
  return { initial, states, steps, taken };
}

/**
 * Replays `events` from `initial` with the real `transition`; an event `enabled` refuses, or
 * one sent to a finished machine, fails (a path that cannot be replayed is a broken test, never
 * a shorter one). `resolve` may rebuild an event from the current snapshot (e.g. a turn number).
 *
 * @example
 * ```ts
 * const steps = replayOrFail(agentMachine, initial, path.steps.slice(1).map((s) => s.event), events);
 * ```
 */
export function replayOrFail<M extends AnyStateMachine>(
  machine: M,
  initial: Snap<M>,
  events: readonly Ev<M>[],
  enabled: (s: Snap<M>) => readonly Ev<M>[],
  resolve: (event: Ev<M>, prev: Snap<M>) => Ev<M> = (event) => event,
): ModelStep<M>[] {
  let prev = initial;
  const steps: ModelStep<M>[] = [];
  for (const recorded of events) {
    const event = resolve(recorded, prev);
    const offered = enabled(prev).some((e) => e.type === event.type);
    if (meta(prev).status !== 'active' || !offered) {
      throw new Error(
        `replay: ${event.type} cannot be replayed after ${steps.map((s) => s.event.type).join(' → ') || '(start)'} ` +
          `(state ${JSON.stringify(meta(prev).value)}, status ${meta(prev).status})`,
      );
    }
    const edges = takenEdges(machine, prev, event);
    const [next] = transition(machine, prev, event) as [Snap<M>, unknown];
    steps.push({ event, prev, next, edges });
    prev = next;
  }
  return steps;
}

/**
 * The defined transitions no step took, minus `unreachable` (each with the reason it cannot
 * be taken); a test asserts this is empty.
 *
 * @example
 * ```ts
 * expect(untaken(machine, x.taken)).toEqual([]);
 * ```
 */
export function untaken(
  machine: AnyStateMachine,
  taken: Iterable<string>,
  unreachable: Readonly<Record<string, string>> = {},
): string[] {
  const seen = new Set(taken);
  return [...definedEdges(machine)].filter((e) => !seen.has(e) && !(e in unreachable));
}
