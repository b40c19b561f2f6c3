import { type ActorRefFrom, assign, setup, stopChild } from 'xstate';
import { type AgentMachineInput, agentMachine } from './agent.js';
import { completionRouterMachine, type RouterMachineInput } from './completion-router.js';

/** The live publications: each agent actor and its router, keyed by system id. */
export interface AgentRegistryContext {
  readonly agents: Readonly<Record<string, ActorRefFrom<typeof agentMachine>>>;
  readonly routers: Readonly<Record<string, ActorRefFrom<typeof completionRouterMachine>>>;
}

export type AgentRegistryEvent =
  /** Spawn one agent publication and its completion router (W1). */
  | { readonly type: 'PUBLISH'; readonly agent: AgentMachineInput; readonly router: RouterMachineInput }
  /** S5 (hot reload): spawn a new router for a live publication whose router was detached. */
  | { readonly type: 'ATTACH'; readonly router: RouterMachineInput }
  /** Refuse new publications (the service is being disposed, D2). */
  | { readonly type: 'CLOSE' }
  /** A child reached its final state (`retired` / `closed`). */
  | { readonly type: `xstate.done.actor.${string}`; readonly actorId: string }
  /** A child an error escaped from (defensive: both machines handle their errors). */
  | { readonly type: `xstate.error.actor.${string}`; readonly actorId: string };

// The router (and agent) a PUBLISH or ATTACH event carries (assign's mapper sees the whole event union).
function published(event: AgentRegistryEvent): { agent?: AgentMachineInput; router: RouterMachineInput } {
  if (event.type !== 'PUBLISH' && event.type !== 'ATTACH') {
    throw new Error(`machines/agent-registry: cannot publish on ${event.type}`);
  }
  return event;
}

// A record without `key`.
function without<T>(record: Readonly<Record<string, T>>, key: string): Record<string, T> {
  const { [key]: _gone, ...rest } = record;
  return rest;
}

/**
 * The root actor of the agent system (system id `tether.agents`): every agent publication
 * and its completion router are children with readable system ids (`agent:<sessionId>:<n>`,
 * `router:<sessionId>:<n>`), so the inspector shows the whole tree. `ATTACH` gives a live
 * publication a new router after a hot reload detached the old one (S5). A child that reached
 * its final state is stopped and forgotten in the same step.
 *
 * @example
 * ```ts
 * const root = createActor(agentRegistryMachine.provide({ actors: { agent, router } }), {
 *   systemId: 'tether.agents',
 * }).start();
 * root.send({ type: 'PUBLISH', agent: agentInput, router: routerInput });
 * root.getSnapshot().context.agents['agent:s1:1']; // the agent actor
 * ```
 */
export const agentRegistryMachine = setup({
  types: {
    context: {} as AgentRegistryContext,
    events: {} as AgentRegistryEvent,
  },
  actors: { agent: agentMachine, router: completionRouterMachine },
  actions: {
    // The agent first: the router delivers to it and starts listening as soon as it exists.
    publish: assign(({ context, event, spawn }) => {
      const { agent, router } = published(event);
      return {
        agents:
          agent === undefined
            ? context.agents
            : {
                ...context.agents,
                [agent.publication]: spawn('agent', {
                  id: agent.publication,
                  systemId: agent.publication,
                  input: agent,
                }),
              },
        routers: {
          ...context.routers,
          [router.id]: spawn('router', { id: router.id, systemId: router.id, input: router }),
        },
      };
    }),
    forget: assign(({ context }, params: { readonly actorId: string }) => ({
      agents: without(context.agents, params.actorId),
      routers: without(context.routers, params.actorId),
    })),
  },
}).createMachine({
  id: 'agents',
  context: { agents: {}, routers: {} },
  initial: 'open',
  states: {
    open: { on: { PUBLISH: { actions: 'publish' }, ATTACH: { actions: 'publish' }, CLOSE: 'closed' } },
    closed: {},
  },
  on: {
    'xstate.done.actor.*': {
      actions: [
        stopChild(({ event }) => event.actorId),
        { type: 'forget', params: ({ event }) => ({ actorId: event.actorId }) },
      ],
    },
    'xstate.error.actor.*': {
      actions: [
        stopChild(({ event }) => event.actorId),
        { type: 'forget', params: ({ event }) => ({ actorId: event.actorId }) },
      ],
    },
  },
});
