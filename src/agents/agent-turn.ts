import type { InboxItem, TurnInput } from '../../machines/agent.js';
import { TetherError } from '../errors.js';
import type { AgentActor, AgentRecord } from './agent-record.js';
import type { Agent, Turn } from './agent-types.js';

/**
 * The `turn` actor's body: calls the orchestrator's `onTurn` once, on a later microtask
 * (never inside the transition that started the turn, so `claim()` is processed at once),
 * tracked as `turn` work until it settles. `signal` aborts when the turn actor is stopped
 * (the agent was disposed mid-turn, D1).
 *
 * @example
 * ```ts
 * turn: fromPromise(({ input, signal }) => runTurn(record, agent, input, signal)),
 * ```
 */
export function runTurn(
  record: AgentRecord,
  agent: Agent,
  input: TurnInput,
  signal: AbortSignal,
): Promise<void> {
  return record.work.track('turn', drive(record, agent, input, signal));
}

async function drive(
  record: AgentRecord,
  agent: Agent,
  input: TurnInput,
  signal: AbortSignal,
): Promise<void> {
  await null;
  if (signal.aborted) return;
  const actor = record.actor!;
  const turn: Turn = {
    agent,
    number: input.turn,
    reason: input.reason,
    signal,
    inbox: {
      claim: () => claimInbox(actor, input.turn),
      get pending() {
        const { context } = actor.getSnapshot();
        return context.nextTurn.length + context.nextStep.length;
      },
    },
  };
  await record.onTurn(turn);
}

/**
 * W2/W5: sends `CLAIM` for `turn` and reads the batch the machine took back from its
 * snapshot. A disposed agent refuses with `OWNER_RETIRED`; a turn that is over with
 * `INVALID_ARGUMENT` (it must not take what belongs to a later turn).
 *
 * @example
 * ```ts
 * const items = claimInbox(actor, 3); // [{ kind: 'user', seq: 7, text: 'and lint it' }]
 * ```
 */
export function claimInbox(actor: AgentActor, turn: number): InboxItem[] {
  const before = actor.getSnapshot();
  if (before.status !== 'active' || before.matches('retiring')) {
    throw new TetherError('OWNER_RETIRED', 'the agent was disposed; its inbox is closed');
  }
  if (!before.can({ type: 'CLAIM', turn })) {
    throw new TetherError(
      'INVALID_ARGUMENT',
      `turn ${turn} is over; only the current turn (${before.context.turns}) may claim the inbox`,
    );
  }
  actor.send({ type: 'CLAIM', turn });
  const after = actor.getSnapshot();
  if (after.context.claims !== before.context.claims + 1) {
    throw new Error('agents: CLAIM was queued behind a running transition; claim outside machine actions');
  }
  return [...after.context.claimed];
}
