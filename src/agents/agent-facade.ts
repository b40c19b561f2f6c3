import type { SnapshotFrom } from 'xstate';
import type { agentMachine } from '../../machines/agent.js';
import { assertArgument, TetherError } from '../errors.js';
import type { OwnerTools } from '../tools/tool-types.js';
import { type IdleWaiters, waitForIdle } from './agent-idle.js';
import type { AgentRecord } from './agent-record.js';
import type { Agent, AgentDisposal, AgentPhase, AgentStatus } from './agent-types.js';

/**
 * The public phase of an agent snapshot: `retiring` already reads as `retired` (it accepts
 * nothing), and so does a stopped actor.
 *
 * @example
 * ```ts
 * phaseOf(actor.getSnapshot()); // 'idle' | 'running' | 'retired'
 * ```
 */
export function phaseOf(snapshot: SnapshotFrom<typeof agentMachine>): AgentPhase {
  if (snapshot.status !== 'active') return 'retired';
  if (snapshot.matches('idle')) return 'idle';
  return snapshot.matches('running') ? 'running' : 'retired';
}

/**
 * The orchestrator's handle on one agent publication. Everything it reports is read from
 * the agent actor's snapshot (no parallel status); `dispose` is the service's D1.
 *
 * @example
 * ```ts
 * const agent = agentFacade(record, () => disposeAgent(record), bindTools(registry, record.lease.token), waiters);
 * agent.say('run the tests');
 * await agent.idle();
 * ```
 */
export function agentFacade(
  record: AgentRecord,
  dispose: () => Promise<AgentDisposal>,
  tools: OwnerTools,
  waiters: IdleWaiters,
): Agent {
  const snapshot = () => record.actor!.getSnapshot();
  const agent: Agent & { toJSON(): unknown } = {
    id: record.publication,
    sessionId: record.sessionId,
    owner: record.lease.token,
    tools,
    get phase() {
      return phaseOf(snapshot());
    },
    say(text) {
      assertArgument(typeof text === 'string', `say(text): text must be a string (got ${typeof text})`);
      const event = { type: 'SAY', text } as const;
      if (!snapshot().can(event)) {
        throw new TetherError('OWNER_RETIRED', 'the agent was disposed; create a new agent for this session');
      }
      record.actor!.send(event);
    },
    idle(options) {
      return waitForIdle(record.actor!, waiters, options?.signal);
    },
    status(): AgentStatus {
      const s = snapshot();
      const { context } = s;
      return {
        phase: phaseOf(s),
        turns: context.turns,
        wakes: context.wakes,
        maxWakes: context.maxWakes,
        wake: context.wake,
        pendingTurn: context.nextTurn.length,
        pendingStep: context.nextStep.length,
      };
    },
    dispose,
    // O1: the owner token never leaves through serialization.
    toJSON: () => ({ id: record.publication, sessionId: record.sessionId, phase: phaseOf(snapshot()) }),
  };
  return agent;
}
