import { setMaxListeners } from 'node:events';
import { createAgentService } from './agents/agent-service.js';
import type { Agent, AgentOptions, AgentService, AgentServiceStats } from './agents/agent-types.js';
import { assertArgument, TetherError } from './errors.js';
import { createJobService } from './jobs/job-service.js';
import type { JobInfo, JobService, JobServiceStats } from './jobs/job-types.js';
import { allocatorTrim } from './native/allocator.js';
import { openFactLog } from './observe/fact-log.js';
import { createFactStream } from './observe/fact-stream.js';
import type { Fact, ObserveOptions } from './observe/fact-types.js';
import { recoveryFact } from './observe/recovery-fact.js';
import { verdictFact } from './observe/verdict-fact.js';
import { createSpillPool } from './output/spill.js';
import { createSpillRetention } from './output/spill-retention.js';
import { identifiedJobSpec, ownerEnv, requestOwner, withIdentity, withOwner } from './owner-env.js';
import { createOwnerRegistry, type OwnerLease } from './owners/owner-registry.js';
import type { AgentOwnerToken } from './owners/owner-token.js';
import { type Reclaimer, reclaimingLease } from './owners/reclaiming-lease.js';
import { createPersistence, type Persistence } from './persist/persist-adopt.js';
import { helperGone, openPersistHelper, type PersistHelper } from './persist/persist-helper.js';
import type { PersistedTree } from './persist/persisted-tree.js';
import { createPlacement, type SandboxStats } from './placement/placement.js';
import type { PlacementOptions } from './placement/placement-types.js';
import { assertPolicy, createPolicyGate } from './policy/policy-gate.js';
import { assertProvider, type RuntimeOptions, resolveOptions } from './runtime-options.js';
import { resolveConfinement } from './sandbox/sandbox-options.js';
import { findSandboxTools, probeSandbox } from './sandbox/sandbox-tools.js';
import { adoptedShellJobSpec, startShellJob } from './shell/shell-job.js';
import { runShell, type ShellDeps } from './shell/shell-service.js';
import type { ShellService } from './shell/shell-types.js';
import { runtimeOrigin } from './subprocess/containment/container-labels.js';
import type { ContainmentMode } from './subprocess/containment/containment-types.js';
import type { RecoveredRuntime } from './subprocess/containment/reaper.js';
import { openRuntimeBoundary } from './subprocess/containment/runtime-boundary.js';
import { createLocalProvider } from './subprocess/local-provider.js';
import { treeIdPrefix } from './subprocess/marker.js';
import { hasProcfs, listTaggedProcesses } from './subprocess/proc.js';
import { startSpawner } from './subprocess/spawner/spawner.js';
import type { SubprocessProvider } from './subprocess/types.js';
import { createPersistentBash, type PersistentBash } from './terminals/persistent-bash.js';
import { createTerminalService } from './terminals/terminal-service.js';
import type { TerminalInfo, TerminalService, TerminalServiceStats } from './terminals/terminal-types.js';
import { bindTools, createToolRegistry } from './tools/tool-registry.js';
import type { ToolRegistry } from './tools/tool-types.js';

export type { ShellService } from './shell/shell-types.js';

/** `rt.owners`: explicit owners for non-agent callers (O2). */
export interface OwnerService {
  /**
   * A new owner. Its `retire()` ends it: new operations fail with `OWNER_RETIRED`, and what it
   * started is reclaimed in the background — terminals, then jobs, to verified-dead trees
   * (`rt.terminals.drainOwner(token)` / `rt.jobs.drainOwner(token)` await each part;
   * `rt.dispose()` waits for it). `options` place it (X4, A3, K5): its own provider, sandbox
   * or isolation, overriding the runtime's; its enclave ends once it is reclaimed.
   */
  host(options?: PlacementOptions): OwnerLease;
}

/**
 * What `rt.reload` swaps in (S5). `provider` may be a factory — e.g. an `import()` of the
 * reloaded module — that runs inside the listener gap.
 */
export interface ReloadOptions {
  readonly provider?: SubprocessProvider | (() => SubprocessProvider | Promise<SubprocessProvider>);
}

/**
 * A snapshot of everything live that the runtime owns (D3): all zero after `dispose()`.
 * `processes` counts live processes carrying this Node process's tree marker (from /proc;
 * `null` where there is none), so it covers every runtime of the process.
 */
export interface RuntimeStats {
  /**
   * K1: the boundary new trees start in — `cgroup` or `marker` for the runtime's local provider,
   * `provider` for a provider it was handed (that provider contains its own trees).
   */
  readonly containment: ContainmentMode | 'provider';
  /** K4: spill files the runtime holds (removed on dispose), and their bytes. */
  readonly spills: { readonly files: number; readonly bytes: number };
  readonly processes: number | null;
  /** Worker threads: the spill pool's and the providers' (the PTY worker). */
  readonly workers: number;
  /** Armed timers: job waits, quiet windows, teardown and reload deadlines. */
  readonly timers: number;
  /**
   * Promises the runtime holds open: job waits, starts and listener calls, terminal sends and
   * listener calls, agent turns, deliveries, teardowns, error reports and reloads, and runtime
   * calls and owner reclaims in flight.
   */
  readonly waiters: number;
  readonly jobs: JobServiceStats;
  readonly terminals: TerminalServiceStats;
  readonly agents: AgentServiceStats;
  /** A1: approvals pending now (each also counted in `waiters`). */
  readonly policy: { readonly asking: number };
  /** A3: the runtime's sandbox (mode, mechanism, network, roots) and the enclaves running now. */
  readonly sandbox: SandboxStats;
}

/** What `agents.create({ adopt: true })` took over (K6). */
export interface AdoptedSession {
  readonly jobs: readonly JobInfo[];
  readonly terminals: readonly TerminalInfo[];
}

/** The composition root's product (SPEC section 9). */
export interface Runtime {
  readonly shell: ShellService;
  readonly jobs: JobService & {
    /**
     * K6: takes over job `id` that a previous runtime of this persisted name left running (or
     * that ended since): it keeps its id, `read` goes on from any cursor at or after its
     * `rt.resumable()` cursor, its exit is reported once. JOB_NOT_FOUND when no such job waits.
     */
    adopt(owner: AgentOwnerToken, id: string): Promise<JobInfo>;
  };
  readonly terminals: TerminalService & {
    /**
     * K6: takes over terminal `id` a previous runtime of this persisted name left open; the output
     * the helper kept is replayed into it, so `screen()` shows what the terminal shows.
     */
    adopt(owner: AgentOwnerToken, id: string): Promise<TerminalInfo>;
  };
  /**
   * K6: the jobs and terminals a previous runtime of this `persist.name` left with the helper and
   * nobody adopted yet (empty without `persist`). Unadopted ones die `lingerMs` after it ended.
   */
  resumable(): Promise<PersistedTree[]>;
  /** One hidden terminal per owner behind a one-shot-like call (SPEC section 8). */
  readonly persistentBash: PersistentBash;
  /** The model tools (SPEC section 8); `agent.tools` binds them to an agent's owner (O3). */
  readonly tools: ToolRegistry;
  readonly owners: OwnerService;
  /** Agents with completion routing and wake budgets (SPEC section 6). */
  readonly agents: Pick<AgentService, 'stats'> & {
    /**
     * An agent (SPEC section 6). K6: with `adopt: true`, the jobs and terminals a previous
     * runtime's agent of the same `sessionId` left are adopted by this one; `agent.adopted`
     * resolves with them.
     */
    create(
      options: AgentOptions & { readonly adopt?: boolean },
    ): Agent & { readonly adopted?: Promise<AdoptedSession> };
  };
  /**
   * S5, hot reload while the runtime lives: new one-shot commands, background jobs and
   * terminals spawn through the new provider (processes already running stay with the one that
   * started them and are still killed and drained by it; the runtime owns and at dispose
   * releases both), and the lifecycle wiring is re-attached: every
   * live agent's completion router is replaced by one that subscribes first and then replays
   * the completions that ended in the gap. An agent disposed during the gap is still drained.
   * A factory that throws leaves the old provider in place (the error is rethrown).
   */
  reload(options?: ReloadOptions): Promise<void>;
  /** D3: what is live now; every count is zero once `dispose()` resolved. */
  stats(): RuntimeStats;
  /**
   * K3: what this runtime reaped when it started — the trees, cgroups and spills of runtimes
   * that died (SIGKILL, OOM) without `dispose` and had the same `stateDir`.
   */
  readonly recovered: readonly RecoveredRuntime[];
  /**
   * V1: every fact of this runtime as it happens (docs/FACTS.md): jobs, terminals, agents,
   * notices, kill verdicts, recovery, the runtime's own lifecycle. Returns the unsubscribe.
   * `{ replay: true }` first delivers the recent facts; `{ inspection: true }` adds the
   * XState inspection events under stable actor ids.
   */
  observe(listener: (fact: Fact) => void, options?: ObserveOptions): () => void;
  /** D2: ends every process, timer and worker the runtime started. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Creates a runtime: the one place that wires the provider, the spill worker and the services.
 *
 * @example
 * ```ts
 * import { createRuntime } from 'tether-runtime';
 * const rt = await createRuntime();
 * const { exitCode, output } = await rt.shell.run({ command: 'echo hello' });
 * const lease = rt.owners.host();
 * const job = await rt.shell.background(lease.token, { command: 'sleep 5; echo done' });
 * await rt.jobs.wait(lease.token, job.id, 10_000);
 * await rt.dispose();
 * ```
 */
export async function createRuntime(options?: RuntimeOptions): Promise<Runtime> {
  const opts = resolveOptions(options);
  // A3: a sandbox this machine cannot give fails here, before anything starts.
  const confinement = resolveConfinement(opts.sandbox, opts.isolation, opts.cwd);
  if (confinement !== null) {
    const { network } = confinement.description;
    await probeSandbox(findSandboxTools(), [
      '--unshare-pid',
      ...(network === 'none' ? ['--unshare-net'] : []),
    ]);
  }
  // K3 then K1: reap dead runtimes, open this one's boundary, record it before any spawn.
  const boundary = await openRuntimeBoundary({
    containment: opts.containment,
    stateDir: opts.stateDir,
    spillRoot: opts.spillDir,
    graceMs: opts.cleanupGraceMs,
    nice: opts.nice,
  });
  const facts = createFactStream(opts.inspect ? { userInspect: opts.inspect } : {});
  let log: Awaited<ReturnType<typeof openFactLog>> | null = null;
  // K6: a persisted runtime's processes run under its local helper daemon (PERSIST_IN_USE here).
  let persisted: PersistHelper | null = null;
  try {
    if (opts.log !== undefined) log = await openFactLog(facts, opts.log);
    if (opts.persist !== undefined) {
      persisted = await openPersistHelper({
        ...opts.persist,
        stateDir: opts.stateDir,
        env: opts.env,
        ...(opts.env.identityPrefix === undefined ? {} : { identityPrefix: opts.env.identityPrefix }),
        keepBytes: { job: opts.jobRetentionChars, terminal: opts.terminalRetentionChars },
        exclusive: true,
        onLingered: (actor, verdict) => facts.emit(verdictFact(actor, verdict)), // V1
      });
    }
  } catch (err) {
    await log?.close();
    await boundary.close(); // a runtime that failed to start leaves no cgroup or record behind
    throw err;
  }
  const given = opts.provider ?? persisted?.provider;
  const containment = given ? 'provider' : boundary.containment.mode;
  facts.emit({ type: 'runtime.started', pid: process.pid, containment });
  if (boundary.recovered.length > 0) facts.emit(recoveryFact(boundary.recovered));
  const spillRoot = opts.spillDir;
  const spillPool =
    boundary.spillDir === null
      ? null
      : createSpillPool({ dir: boundary.spillDir, durable: opts.spillDurable });
  const spills =
    boundary.spillDir === null || spillRoot === false
      ? null
      : createSpillRetention({ dir: boundary.spillDir, root: spillRoot, budgetBytes: opts.spillBudgetBytes });
  const owners = createOwnerRegistry();
  const envOf = ownerEnv(owners, opts.env.identityPrefix);
  // A1: the one decision point; every spawn path below calls `policy.decide` first.
  const policy = createPolicyGate({ owners, policy: opts.policy, sandbox: opts.sandbox });
  const jobs = createJobService({
    owners,
    maxRunningPerOwner: opts.maxJobsPerOwner,
    retentionChars: opts.jobRetentionChars,
    finishedRetentionCharsPerOwner: opts.finishedJobRetentionChars,
    inspect: facts.inspect,
    facts,
  });
  // The runtime owns every provider it was handed or made (S2, S5): dispose releases each.
  // P1: local children start from the small spawner process, not by forking this one.
  // K3: its FIFO directory is below the state dir, where recovery finds what a crash left.
  // Issue 30.6: its children run `nice` levels below this process, all in one CPU group.
  const spawner = given
    ? null
    : startSpawner(undefined, boundary.spawnerDir, opts.nice, boundary.cpuGroup?.procs);
  let current: SubprocessProvider =
    given ?? createLocalProvider({ env: opts.env, containment: boundary.containment, spawner });
  const providers = new Set([current]);
  // X4: a provider per owner; sandboxed and isolated owners get an enclave of their own (A3, K5).
  const placement = createPlacement({
    owners,
    base: () => current,
    defaults: {
      ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
      ...(opts.isolation ? { isolation: opts.isolation } : {}),
    },
    cwd: opts.cwd,
    cleanupGraceMs: opts.cleanupGraceMs,
    adopt: (provider) => providers.add(provider),
    settled: async (owner) => {
      await terminals.drainOwner(owner);
      await jobs.drainOwner(owner);
    },
    origin: runtimeOrigin(boundary.runtimeId), // X6: the labels of its containers and pods
    recordPodPlace: (place) => boundary.podPlaces.record(place), // X6: where recovery looks for its pods
  });
  const terminals = createTerminalService({
    owners,
    provider: (owner) => placement.providerFor(owner),
    defaults: { shell: opts.shell, cwd: opts.cwd, cleanupGraceMs: opts.cleanupGraceMs },
    retentionChars: opts.terminalRetentionChars,
    maxPerOwner: opts.maxTerminalsPerOwner,
    identityEnv: (owner) => envOf(owner),
    decide: policy.decide,
    inspect: facts.inspect,
    facts,
  });
  const inFlight = new Set<Promise<unknown>>();
  const lifetime = new AbortController();
  // Every running command listens on it (one listener each): no MaxListenersExceededWarning at 11.
  setMaxListeners(0, lifetime.signal);
  let disposing: Promise<void> | null = null;

  // Every call is tracked so dispose can wait for it; nothing starts after dispose began.
  const track = <T>(work: () => Promise<T>): Promise<T> => {
    if (disposing)
      return Promise.reject(
        new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one'),
      );
    const promise = Promise.resolve().then(work); // misuse rejects; it never throws synchronously
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  };

  // O2 with D1's reclaim: an owner that ended never leaves its processes running until dispose.
  const reclaimer: Reclaimer = {
    reclaim: (owner) =>
      track(async () => {
        await terminals.drainOwner(owner);
        await jobs.drainOwner(owner);
        await placement.drainOwner(owner);
      }).catch((error: unknown) =>
        process.emitWarning(`tether: reclaiming a retired owner failed: ${String(error)}`, {
          code: 'TETHER_OWNER',
        }),
      ),
  };

  // `provider` is read per call: a reload swaps it for the calls that start after it (S5).
  const shellDeps: ShellDeps = {
    provider: (owner, req) => placement.providerFor(owner, { escalate: req.escalate !== undefined }),
    lifetime: lifetime.signal,
    decide: policy.decide,
    facts,
    spillPool,
    spills,
    defaults: {
      shell: opts.shell,
      cwd: opts.cwd,
      outputCapChars: opts.outputCapChars,
      cleanupGraceMs: opts.cleanupGraceMs,
      drainMs: opts.drainMs,
    },
  };

  const shell: ShellService = {
    run: (req, owner) =>
      track(async () => {
        // The owner decides the policy (A1) and carries its identity into the env (S3).
        const who = requestOwner(req, owner);
        if (who === undefined) return runShell(shellDeps, req);
        return runShell(shellDeps, withIdentity(withOwner(req, who), envOf(owners.assertLive(who))));
      }),
    background: (owner, req) =>
      track(() =>
        startShellJob(
          shellDeps,
          jobs,
          owner,
          req,
          identifiedJobSpec(shellDeps, owner, req, (jobId) => envOf(owner, jobId)),
        ),
      ),
  };
  const persistentBash = createPersistentBash(terminals, { cwd: opts.cwd, decide: policy.decide });
  const tools = createToolRegistry({ shell, jobs, terminals, persistentBash }, opts.tools);
  // Agents drain their terminals, then their jobs (reverse start order, D1).
  const agents = createAgentService({
    owners,
    jobs,
    terminals,
    drainables: [placement, terminals],
    quietWindowMs: opts.quietWindowMs,
    turnGraceMs: opts.turnGraceMs,
    tools: (owner) => bindTools(tools, owner),
    inspect: facts.inspect,
  });
  // K6: what a previous runtime of this name left, and taking it over.
  const persistence: Persistence | null =
    persisted &&
    createPersistence({
      helper: persisted,
      jobs,
      openAdopted: terminals.openAdopted,
      jobSpec: (label, handle) => adoptedShellJobSpec(shellDeps, label, handle),
      cleanupGraceMs: opts.cleanupGraceMs,
      facts,
    });
  const survivors = (await persistence?.resumable().catch(() => [])) ?? [];
  if (persisted && survivors.length > 0) {
    const count = (kind: string) => survivors.filter((t) => t.kind === kind).length;
    facts.emit({
      type: 'persist.resumed',
      name: opts.persist!.name,
      jobs: count('job'),
      terminals: count('terminal'),
    });
  }
  const persistent = (what: string): Persistence => {
    if (persistence !== null) return persistence;
    throw new TetherError(
      what === 'job' ? 'JOB_NOT_FOUND' : 'TERMINAL_NOT_FOUND',
      `this runtime was created without persist: no ${what} of an earlier runtime can be adopted`,
    );
  };

  return {
    shell,
    jobs: { ...jobs, adopt: (owner, id) => track(() => persistent('job').adoptJob(owner, id)) },
    terminals: {
      ...terminals,
      adopt: (owner, id) => track(() => persistent('terminal').adoptTerminal(owner, id)),
    },
    resumable: () => track(async () => (await persistence?.resumable()) ?? []),
    persistentBash,
    tools,
    owners: {
      host(options?: PlacementOptions) {
        // D2: a lease of a disposed runtime would look live and own nothing.
        if (disposing)
          throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
        if (options !== undefined) placement.check(options, 'owners.host options');
        const lease = reclaimingLease(owners.host(), reclaimer);
        if (options !== undefined) placement.assign(lease.token, options);
        return lease;
      },
    },
    recovered: boundary.recovered,
    agents: {
      // X4/A3/K5: where the agent's processes run; A1: its own policy replaces the runtime's.
      create(o) {
        if (o?.policy !== undefined) assertPolicy(o.policy, 'agents.create({ policy })');
        const adopt = o?.adopt;
        assertArgument(
          adopt === undefined || typeof adopt === 'boolean',
          `agents.create({ adopt }) must be true or false, got ${String(adopt)}`,
        );
        const placed = placementOf(o);
        if (placed) placement.check(placed, 'agent options');
        const agent = agents.create(o);
        if (placed) placement.assign(agent.owner, placed);
        policy.bind(agent.owner, {
          policy: o.policy,
          sandbox: o.sandbox,
          caller: {
            kind: 'agent',
            owner: owners.keyOf(agent.owner),
            sessionId: agent.sessionId,
            agentId: agent.id,
          },
        });
        if (adopt !== true) return agent;
        // K6: the trees of this session's agent in the previous runtime become this one's.
        const adopted = track(() => persistent('job').adoptSession(agent.owner, agent.sessionId));
        adopted.catch(() => {}); // the caller's to await; never an unhandled rejection
        return Object.defineProperty(agent, 'adopted', { value: adopted, enumerable: false });
      },
      stats: () => agents.stats(),
    },
    observe: (listener, options) => facts.observe(listener, options),
    stats() {
      const [j, t, a] = [jobs.stats(), terminals.stats(), agents.stats()];
      const providerWorkers = [...providers].reduce((n, p) => n + (p.workers ?? 0), 0);
      const mode = (current as { containment?: unknown }).containment;
      return {
        containment: mode === 'cgroup' || mode === 'marker' ? mode : 'provider',
        spills: { files: spills?.files ?? 0, bytes: spills?.bytes ?? 0 },
        processes: hasProcfs() ? listTaggedProcesses(treeIdPrefix()).length : null,
        workers: (spillPool?.threads ?? 0) + providerWorkers,
        timers: j.timers + t.timers + a.timers + facts.timers,
        waiters:
          j.waiters +
          j.starting +
          j.deliveries +
          t.busy +
          t.deliveries +
          a.turns +
          a.deliveries +
          a.waiters +
          a.errors +
          a.reloads +
          policy.asking +
          inFlight.size,
        jobs: j,
        terminals: t,
        agents: a,
        policy: { asking: policy.asking },
        sandbox: placement.stats(),
      };
    },
    // Not tracked: dispose must not wait for a provider factory (it may never settle).
    async reload(next: ReloadOptions = {}) {
      if (disposing) throw new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one');
      assertArgument(typeof next === 'object' && next !== null, 'reload options must be an object');
      const incoming = next.provider;
      assertArgument(
        incoming === undefined || typeof incoming === 'object' || typeof incoming === 'function',
        'reload({ provider }) takes a SubprocessProvider or a function returning one',
      );
      await agents.reload(async () => {
        if (incoming === undefined) return;
        const loaded = typeof incoming === 'function' ? await incoming() : incoming;
        assertProvider(loaded, 'reload({ provider })');
        if (disposing) return;
        providers.add(loaded);
        current = loaded;
      });
    },
    dispose() {
      disposing ??= (async () => {
        reclaimer.reclaim = null; // dispose drains every owner itself
        facts.emit({ type: 'runtime.disposing' });
        lifetime.abort(); // running one-shot commands are cancelled (D2)
        policy.dispose(); // pending approvals end (RUNTIME_DISPOSED): an ask never holds teardown
        await agents.dispose(); // D1 for every agent: owners retired, turns aborted, resources drained
        await Promise.allSettled([...inFlight]);
        // Reverse start order: terminals, then jobs, each to verified-dead trees (D2).
        await terminals.dispose();
        await jobs.dispose();
        await placement.dispose(); // every enclave, after the processes in it were drained
        for (const failed of await Promise.allSettled([...providers].map((p) => p.dispose?.()))) {
          if (failed.status === 'rejected') {
            process.emitWarning(`tether: a provider's dispose failed: ${String(failed.reason)}`, {
              code: 'TETHER_PROVIDER',
            });
          }
        }
        // K6: the helper ends once its trees were killed and this runtime left, its directory with it.
        if (persisted !== null && !(await helperGone(persisted, 5_000))) {
          process.emitWarning(`tether: the persist helper in ${persisted.dir} did not end within 5 s`, {
            code: 'TETHER_PROVIDER',
          });
        }
        await spawner?.dispose(); // after every tree it started was killed and reported
        await spillPool?.destroy();
        spills?.removeAll(); // K4: unless kept, a spill does not outlive its runtime
        await boundary.close(); // the runtime's cgroup and ledger record go last
        allocatorTrim()?.trim(); // its threads ended: what they freed goes back to the kernel (D2)
        facts.emit({ type: 'runtime.disposed' });
        facts.close();
        await log?.close();
      })();
      return disposing;
    },
  };
}

// The placement fields of agent options, if any is set (X4, X6, A3, K5).
function placementOf(o: PlacementOptions | null | undefined): PlacementOptions | null {
  if (typeof o !== 'object' || o === null) return null;
  const { provider, placement, sandbox, isolation } = o;
  if (provider === undefined && placement === undefined && sandbox === undefined && isolation === undefined)
    return null;
  return {
    ...(provider !== undefined ? { provider } : {}),
    ...(placement !== undefined ? { placement } : {}),
    ...(sandbox !== undefined ? { sandbox } : {}),
    ...(isolation !== undefined ? { isolation } : {}),
  };
}
