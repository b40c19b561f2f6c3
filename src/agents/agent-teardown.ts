import type { JobService } from '../jobs/job-types.js';
import type { AgentRecord } from './agent-record.js';
import type { AgentErrorStage, Drainable } from './agent-types.js';

/** What one agent's teardown needs from the service. */
export interface TeardownDeps {
  readonly jobs: JobService;
  /** Started after `jobs`, in start order. */
  readonly drainables: readonly Drainable[];
  /** How long to wait for an aborted turn (and a pending `onNotice`) to settle. */
  readonly graceMs: number;
  /** Publishes a failure on the error path. */
  readonly report: (stage: AgentErrorStage, error: unknown) => void;
}

/**
 * The `teardown` actor of an agent in `retiring` (D1). The owner was retired on entry (every
 * new operation with the token fails with `OWNER_RETIRED`) and leaving `running` aborted the
 * turn's signal. Then, in order:
 *
 * 1. close the router (and one a hot reload detached, if still delivering): its completion
 *    listener is detached and its quiet-window timer cancelled; completions not yet
 *    delivered are dropped (the agent can take nothing now);
 * 2. drain the owner's resources in reverse start order (`drainables` last-first, `jobs`
 *    last); each drain resolves when the owner's processes are verifiably gone;
 * 3. wait for the aborted turn and in-flight deliveries, each bounded by `graceMs` (the
 *    driver's promise is the orchestrator's: one that never settles is reported and left,
 *    and `stats().abandonedTurns` counts it until it does);
 * 4. wait for error publication, this teardown's own reports included.
 *
 * A drain that fails is reported and the next one still runs; the teardown never rejects.
 *
 * @example
 * ```ts
 * teardown: fromPromise(({ input }) => tearDown(records.get(input.publication)!, deps)),
 * ```
 */
export async function tearDown(record: AgentRecord, deps: TeardownDeps): Promise<void> {
  for (const router of record.routers) {
    if (router.getSnapshot().status === 'active') router.send({ type: 'CLOSE' });
  }
  for (const service of [deps.jobs, ...deps.drainables].reverse()) {
    try {
      await service.drainOwner(record.lease.token);
    } catch (error) {
      deps.report('drain', error);
    }
  }
  if (!(await record.work.settleWithin('turn', deps.graceMs))) {
    deps.report(
      'turn',
      new Error(
        `onTurn did not settle within ${deps.graceMs} ms after the agent was disposed; it was abandoned`,
      ),
    );
  }
  if (!(await record.work.settleWithin('delivery', deps.graceMs))) {
    deps.report(
      'delivery',
      new Error(
        `onNotice did not settle within ${deps.graceMs} ms after the agent was disposed; it was abandoned`,
      ),
    );
  }
  await record.work.settleWithin('error', deps.graceMs);
}
