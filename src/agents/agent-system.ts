import { type Actor, createActor, fromCallback, fromPromise, type InspectionEvent } from 'xstate';
import { agentMachine, type TurnInput } from '../../machines/agent.js';
import { agentRegistryMachine } from '../../machines/agent-registry.js';
import {
  type Completion,
  completionRouterMachine,
  type DeliverInput,
  type Notice,
  type RouterMachineEvent,
} from '../../machines/completion-router.js';
import type { Clock } from './agent-clock.js';

/** The effects the agent and router machines name, implemented by the agent service. */
export interface AgentSystemEffects {
  /** The `turn` actor: runs the orchestrator's `onTurn`; `signal` aborts when the turn is stopped. */
  turn(input: TurnInput, signal: AbortSignal): Promise<void>;
  /** The `teardown` actor of `retiring` (D1 after the owner was retired). */
  teardown(publication: string): Promise<void>;
  /** Entry of `retiring`: retire the publication's owner token (D1). */
  retireOwner(publication: string): void;
  reportTurnError(publication: string, turn: number, error: unknown): void;
  reportTeardownError(publication: string, error: unknown): void;
  /** The router's `completions` source: subscribe, return the unsubscribe (W1). */
  subscribe(publication: string, completed: (completion: Completion) => void): () => void;
  /** The router's `deliver` actor: one coalesced notice to the agent. */
  deliver(input: DeliverInput, signal: AbortSignal): Promise<void>;
  reportDeliveryFailure(publication: string, notice: Notice, error: unknown): void;
  reportSourceFailure(publication: string, error: unknown): void;
}

/** The running root actor: the agent registry, with agents and routers as children. */
export type AgentSystem = Actor<typeof agentRegistryMachine>;

/** The actor system's id, as it shows in the inspector. */
export const AGENT_SYSTEM_ID = 'tether.agents';

/**
 * Starts the agent actor system: the registry machine as root (system id `tether.agents`)
 * with the agent and router machines' effects provided. Pure machines, effects from here.
 *
 * @example
 * ```ts
 * const system = startAgentSystem(effects, { clock: countingClock() });
 * system.send({ type: 'PUBLISH', agent: agentInput, router: routerInput });
 * ```
 */
export function startAgentSystem(
  effects: AgentSystemEffects,
  options: { readonly clock: Clock; readonly inspect?: ((event: InspectionEvent) => void) | undefined },
): AgentSystem {
  const agent = agentMachine.provide({
    actors: {
      turn: fromPromise(({ input, signal }) => effects.turn(input, signal)),
      teardown: fromPromise(({ input }) => effects.teardown(input.publication)),
    },
    actions: {
      retireOwner: ({ context }) => effects.retireOwner(context.publication),
      reportTurnError: ({ context }, params) =>
        effects.reportTurnError(context.publication, params.turn, params.error),
      reportTeardownError: ({ context }, params) =>
        effects.reportTeardownError(context.publication, params.error),
    },
  });
  const router = completionRouterMachine.provide({
    actors: {
      completions: fromCallback<RouterMachineEvent, { readonly publication: string }>(({ input, sendBack }) =>
        effects.subscribe(input.publication, (completion) => sendBack({ type: 'COMPLETED', completion })),
      ),
      deliver: fromPromise(({ input, signal }) => effects.deliver(input, signal)),
    },
    actions: {
      reportDeliveryFailure: ({ context }, params) =>
        effects.reportDeliveryFailure(context.publication, params.notice, params.error),
      reportSourceFailure: ({ context }, params) =>
        effects.reportSourceFailure(context.publication, params.error),
    },
  });
  const root = agentRegistryMachine.provide({ actors: { agent, router } });
  const { inspect, clock } = options;
  return createActor(root, { systemId: AGENT_SYSTEM_ID, clock, ...(inspect ? { inspect } : {}) }).start();
}
