import { type ActorRefFrom, assign, type SnapshotFrom, setup, stopChild } from 'xstate';
import { type AgentMachineInput, agentMachine } from './agent.js';
import { type ChildSlots, childOfKey, slotId, slotOfChild, withKey, withoutSlot } from './child-slots.js';
import { completionRouterMachine, type RouterMachineInput } from './completion-router.js';

/**
 * The live publications and routers, by child slot (machines/child-slots.ts): slot `n` of
 * `agents` holds the publication whose actor is child `agent#<n>`, of `routers` the router id
 * of child `router#<n>`. A child id per publication would leave XState one memoized transition
 * list per agent ever published, for the life of the process.
 */
export interface AgentRegistryContext {
  readonly agents: ChildSlots;
  readonly routers: ChildSlots;
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

const AGENT_SLOT = 'agent#';
const ROUTER_SLOT = 'router#';

type AgentRegistrySnapshot = SnapshotFrom<typeof agentRegistryMachine>;

/**
 * The actor of publication `publication`, or undefined when it is not live.
 *
 * @example
 * ```ts
 * agentChildOf(root.getSnapshot(), 'agent:s1:1')?.getSnapshot().value; // 'idle'
 * ```
 */
export function agentChildOf(
  registry: AgentRegistrySnapshot,
  publication: string,
): ActorRefFrom<typeof agentMachine> | undefined {
  // An `agent#` child is always an agent actor (children are typed as the union of both).
  const children = registry.children as Record<string, ActorRefFrom<typeof agentMachine> | undefined>;
  return childOfKey(children, registry.context.agents, AGENT_SLOT, publication);
}

/**
 * The router `routerId`, or undefined when it is not live.
 *
 * @example
 * ```ts
 * routerChildOf(root.getSnapshot(), 'router:s1:1')?.send({ type: 'DETACH' });
 * ```
 */
export function routerChildOf(
  registry: AgentRegistrySnapshot,
  routerId: string,
): ActorRefFrom<typeof completionRouterMachine> | undefined {
  const children = registry.children as Record<
    string,
    ActorRefFrom<typeof completionRouterMachine> | undefined
  >;
  return childOfKey(children, registry.context.routers, ROUTER_SLOT, routerId);
}

/**
 * Every live router.
 *
 * @example
 * ```ts
 * liveRouters(root.getSnapshot()).length; // 2
 * ```
 */
export function liveRouters(registry: AgentRegistrySnapshot): ActorRefFrom<typeof completionRouterMachine>[] {
  return registry.context.routers.flatMap((id) => (id === null ? [] : [routerChildOf(registry, id)!]));
}

// The context without the child `actorId` (`agent#2` or `router#0`) in its slots.
function without(context: AgentRegistryContext, actorId: string): AgentRegistryContext {
  return actorId.startsWith(AGENT_SLOT)
    ? { ...context, agents: withoutSlot(context.agents, slotOfChild(AGENT_SLOT, actorId)) }
    : { ...context, routers: withoutSlot(context.routers, slotOfChild(ROUTER_SLOT, actorId)) };
}

/**
 * The root actor of the agent system (system id `tether.agents`): every agent publication
 * and its completion router are children (ids by slot, `agent#<n>` / `router#<n>`) with
 * readable system ids (`agent:<sessionId>:<n>`, `router:<sessionId>:<n>`), so the inspector
 * shows the whole tree. `ATTACH` gives a live
 * publication a new router after a hot reload detached the old one (S5). A child that reached
 * its final state is stopped and forgotten in the same step.
 *
 * @example
 * ```ts
 * const root = createActor(agentRegistryMachine.provide({ actors: { agent, router } }), {
 *   systemId: 'tether.agents',
 * }).start();
 * root.send({ type: 'PUBLISH', agent: agentInput, router: routerInput });
 * agentChildOf(root.getSnapshot(), 'agent:s1:1'); // the agent actor
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
      const agents = agent === undefined ? context.agents : withKey(context.agents, agent.publication);
      if (agent !== undefined) {
        const id = slotId(AGENT_SLOT, agents.indexOf(agent.publication));
        spawn('agent', { id, systemId: agent.publication, input: agent });
      }
      const routers = withKey(context.routers, router.id);
      spawn('router', {
        id: slotId(ROUTER_SLOT, routers.indexOf(router.id)),
        systemId: router.id,
        input: router,
      });
      return { agents, routers };
    }),
    forget: assign(({ context }, params: { readonly actorId: string }) => without(context, params.actorId)),
  },
}).createMachine({
  id: 'agents',
  context: { agents: [], routers: [] },
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
