import { AsyncLocalStorage } from 'node:async_hooks';
import { toPromise } from 'xstate';
import { agentChildOf, liveRouters, routerChildOf } from '../../machines/agent-registry.js';
import { assertArgument, TetherError } from '../errors.js';
import type { OwnerTools } from '../tools/tool-types.js';
import { resolveAgentOptions, resolveServiceOptions } from './agent-args.js';
import { countingClock } from './agent-clock.js';
import { deliverNotice, type ListenerCount, subscribeCompletions } from './agent-delivery.js';
import { agentFacade } from './agent-facade.js';
import type { IdleWaiters } from './agent-idle.js';
import { type AgentRecord, publishError, unclaimedInputError, warnAgentError } from './agent-record.js';
import { startAgentSystem } from './agent-system.js';
import { tearDown } from './agent-teardown.js';
import { runTurn } from './agent-turn.js';
import type {
  AgentDisposal,
  AgentErrorStage,
  AgentService,
  AgentServiceOptions,
  Notice,
} from './agent-types.js';
import { AgentWork, type WorkKind, type WorkTimers } from './agent-work.js';

// Without a tool registry (the agent service used on its own), every call says so.
const NO_TOOLS: OwnerTools = {
  list: () => [],
  call: async (name) => ({
    ok: false,
    code: 'TOOL_NOT_FOUND',
    text: `Error TOOL_NOT_FOUND: there is no tool '${name}': no tools were set up for you.\nThis is a setup error of the program that runs you, not yours to fix.`,
  }),
};

export type * from './agent-types.js';

/**
 * Creates the agent service (SPEC sections 6 and 7): every agent publication an actor of one
 * XState system (root `tether.agents`) with its completion router beside it; the wake
 * budget lives in the agent machine, coalescing in the router machine, teardown in both.
 *
 * @example
 * ```ts
 * const owners = createOwnerRegistry();
 * const jobs = createJobService({ owners });
 * const agents = createAgentService({ owners, jobs });
 * const agent = agents.create({
 *   sessionId: 's1',
 *   onTurn: async (turn) => { for (const item of turn.inbox.claim()) console.log(item); },
 * });
 * agent.say('hello');               // idle → running: a turn with reason 'user'
 * await agents.dispose();           // D2
 * agents.stats();                   // all zero (D3)
 * ```
 */
export function createAgentService(options: AgentServiceOptions): AgentService {
  const { owners, jobs, terminals } = options;
  const { drainables, quietWindowMs, turnGraceMs } = resolveServiceOptions(options);
  const onError = options.onError ?? warnAgentError;
  const clock = countingClock(options.clock);
  const timers: WorkTimers = { timers: 0 };
  const counts: ListenerCount = { listeners: 0 };
  const idleWaiters: IdleWaiters = { idle: 0 };
  const records = new Map<string, AgentRecord>();
  /** Work of torn-down agents that outlived their teardown (abandoned turns). */
  const lingering = new Set<AgentWork>();
  let teardowns = 0;
  let published = 0;
  let reloads = 0;
  /** The reload in progress (reloads run one at a time), and every reload not yet settled. */
  let reloading: Promise<unknown> = Promise.resolve();
  const reloadWork = new AgentWork(timers);
  /** Set inside a reload's `during`: a reload from there would wait for itself. */
  const inGap = new AsyncLocalStorage<true>();
  let disposing: Promise<void> | undefined;

  const recordOf = (publication: string): AgentRecord => {
    const record = records.get(publication);
    if (record === undefined) throw new Error(`agents: no live publication ${publication}`);
    return record;
  };
  const report = (publication: string, stage: AgentErrorStage, error: unknown, notice?: Notice) =>
    publishError(recordOf(publication), onError, stage, error, notice);

  const system = startAgentSystem(
    {
      turn: (input, signal) => {
        const record = recordOf(input.publication);
        return runTurn(record, record.agent!, input, signal);
      },
      teardown: (publication) => {
        const record = recordOf(publication);
        return tearDown(record, {
          jobs,
          drainables,
          graceMs: turnGraceMs,
          report: (stage, error) => publishError(record, onError, stage, error),
        });
      },
      retireOwner: (publication) => recordOf(publication).lease.retire(),
      reportTurnError: (publication, _turn, error) => report(publication, 'turn', error),
      reportTeardownError: (publication, error) => report(publication, 'teardown', error),
      subscribe: (publication, completed) =>
        subscribeCompletions({ jobs, terminals }, recordOf(publication), counts, completed),
      deliver: (input, signal) => deliverNotice(recordOf(input.publication), input.notice, signal),
      reportDeliveryFailure: (publication, notice, error) => report(publication, 'delivery', error, notice),
      reportSourceFailure: (publication, error) => report(publication, 'subscribe', error),
    },
    { clock, inspect: options.inspect },
  );

  // D1: RETIRE runs the agent machine's retiring (owner retired, inbox set aside, router
  // closed, drains, settles); the publication is forgotten once the actor reached `retired`.
  const disposeAgent = (record: AgentRecord): Promise<AgentDisposal> => {
    record.disposing ??= (async () => {
      teardowns++;
      try {
        const actor = record.actor!;
        const retired = toPromise(actor);
        actor.send({ type: 'RETIRE' });
        const { unclaimed } = actor.getSnapshot().context;
        const lost = unclaimedInputError(unclaimed);
        if (lost) publishError(record, onError, 'input', lost);
        await retired.catch((error: unknown) => publishError(record, onError, 'teardown', error));
        await record.work.settleWithin('error', turnGraceMs);
        return { unclaimed };
      } finally {
        teardowns--;
        records.delete(record.publication);
        if (!record.work.idle) lingering.add(record.work);
      }
    })();
    return record.disposing;
  };

  // The router the registry spawned for `id` in the step just sent; none if that step was refused.
  const spawnedRouter = (record: AgentRecord, id: string): boolean => {
    const router = routerChildOf(system.getSnapshot(), id);
    if (router === undefined) return false;
    for (const old of record.routers) if (old.getSnapshot().status !== 'active') record.routers.delete(old);
    record.router = router;
    record.routers.add(router);
    return true;
  };
  const routerInput = (id: string, record: AgentRecord) => ({
    id,
    publication: record.publication,
    windowMs: quietWindowMs,
  });

  // S5: the gap between detaching every live agent's router and attaching new ones.
  const reloadWith = async <T>(during: () => T | Promise<T>): Promise<T> => {
    if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the agent service was disposed');
    const generation = ++reloads;
    for (const record of records.values()) {
      const router = record.router;
      record.router = undefined;
      if (router?.getSnapshot().status === 'active') router.send({ type: 'DETACH' });
    }
    try {
      return await inGap.run(true, during);
    } finally {
      for (const record of records.values()) {
        if (disposing || record.router !== undefined || record.disposing !== undefined) continue;
        const id = `${record.publication.replace(/^agent:/, 'router:')}.${generation}`;
        system.send({ type: 'ATTACH', router: routerInput(id, record) });
        spawnedRouter(record, id); // refused only once the registry closed: dispose is tearing it down
      }
    }
  };

  // Sum of one kind of work over live agents and the leftovers of disposed ones.
  const inFlight = (kind: WorkKind, only?: Iterable<AgentWork>): number => {
    for (const work of lingering) if (work.idle) lingering.delete(work);
    const works = only ? [...only] : [...[...records.values()].map((r) => r.work), ...lingering];
    return works.reduce((n, work) => n + work.count(kind), 0);
  };

  return {
    create(agentOptions) {
      if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the agent service was disposed');
      const { sessionId, wake, maxWakes, onTurn, onNotice } = resolveAgentOptions(agentOptions);
      const n = ++published;
      const publication = `agent:${sessionId}:${n}`;
      const record: AgentRecord = {
        publication,
        sessionId,
        // O1: a fresh token for every publication, also for a reused sessionId; S3: its identity.
        lease: owners.agent({ sessionId, agentId: publication }),
        onTurn,
        onNotice,
        work: new AgentWork(timers),
        routers: new Set(),
      };
      const tools = options.tools?.(record.lease.token) ?? NO_TOOLS;
      record.agent = agentFacade(record, () => disposeAgent(record), tools, idleWaiters);
      records.set(record.publication, record);
      const routerId = `router:${sessionId}:${n}`;
      system.send({
        type: 'PUBLISH',
        agent: { publication: record.publication, sessionId, wake, maxWakes },
        router: routerInput(routerId, record),
      });
      const actor = agentChildOf(system.getSnapshot(), record.publication);
      if (actor === undefined || !spawnedRouter(record, routerId)) {
        records.delete(record.publication);
        record.lease.retire();
        throw new Error('agents: create() was called inside an agent-system transition (e.g. an inspector)');
      }
      record.actor = actor;
      return record.agent;
    },

    stats() {
      const snapshot = system.getSnapshot();
      return {
        agents: records.size,
        actors: Object.keys(snapshot.children).length,
        turns: inFlight('turn'),
        abandonedTurns: inFlight('turn', lingering),
        listeners: counts.listeners,
        queued: liveRouters(snapshot).reduce((n, router) => {
          const snapshot = router.getSnapshot();
          return n + (snapshot.status === 'active' ? snapshot.context.pending.length : 0);
        }, 0),
        deliveries: inFlight('delivery'),
        timers: clock.live + timers.timers,
        waiters: teardowns + idleWaiters.idle,
        errors: inFlight('error'),
        reloads: reloadWork.count('reload'),
      };
    },

    reload(during) {
      assertArgument(typeof during === 'function', 'reload(during) takes a function to run in the gap');
      if (inGap.getStore()) {
        return Promise.reject(
          new TetherError(
            'INVALID_ARGUMENT',
            'reload() was called from inside a reload (its provider factory): it would wait for itself; ' +
              'return the provider from the factory instead',
          ),
        );
      }
      const run = () => reloadWith(during);
      const result = reloadWork.track('reload', reloading.then(run, run));
      reloading = result.catch(() => {});
      return result;
    },

    dispose() {
      disposing ??= (async () => {
        system.send({ type: 'CLOSE' });
        await Promise.all([...records.values()].map(disposeAgent));
        // D3: a reload's gap (the caller's `during`) is waited for, bounded like a turn.
        if (!(await reloadWork.settleWithin('reload', turnGraceMs))) {
          process.emitWarning(
            `reload(during) did not settle within ${turnGraceMs} ms after the agent service was disposed; it was abandoned`,
            { code: 'TETHER_AGENT' },
          );
        }
        system.stop();
      })();
      return disposing;
    },
  };
}
