import { expect } from 'vitest';
import type { InboxItem } from '../../machines/agent.js';
import { createAgentService } from '../../src/agents/agent-service.js';
import type {
  Agent,
  AgentErrorReporter,
  AgentService,
  AgentServiceOptions,
  Turn,
} from '../../src/agents/agent-types.js';
import { createJobService } from '../../src/jobs/job-service.js';
import type { JobInfo, JobService } from '../../src/jobs/job-types.js';
import { createOwnerRegistry, type OwnerRegistry } from '../../src/owners/owner-registry.js';
import { shellJobSpec } from '../../src/shell/shell-job.js';
import type { ShellDeps } from '../../src/shell/shell-service.js';
import { createLocalProvider } from '../../src/subprocess/local-provider.js';
import { createTerminalService } from '../../src/terminals/terminal-service.js';
import type { TerminalService } from '../../src/terminals/terminal-types.js';
import { TERMINALS_QUIESCENT } from '../support/quiescent.js';

export type ReportedError = { error: unknown } & Parameters<AgentErrorReporter>[1];

/** The real services an agent test needs, composed like `createRuntime` does. */
export interface AgentHarness {
  readonly owners: OwnerRegistry;
  readonly jobs: JobService;
  /** Terminals (their PTY worker starts on the first open); agents drain them before jobs. */
  readonly terminals: TerminalService;
  readonly agents: AgentService;
  /** What the agent service published on its error path. */
  readonly errors: ReportedError[];
  /** `rt.shell.background` for an agent: a real `/bin/bash -c` job owned by the agent. */
  background(agent: Agent, command: string, env?: Record<string, string>): Promise<JobInfo>;
  /**
   * S5: puts a fresh local provider behind new terminals and jobs (what `rt.reload({ provider })`
   * does); the earlier ones keep serving what they started and are disposed by `close()`.
   */
  swapProvider(): void;
  /** How many providers were used so far. */
  readonly providers: number;
  /** D2 then D3: disposes agents, terminals and jobs and asserts every count is zero. */
  close(): Promise<void>;
}

// Agent service + job service + shell producer over one owner registry, errors captured.
export function agentHarness(
  options: Partial<Omit<AgentServiceOptions, 'owners' | 'jobs'>> = {},
  jobOptions: { maxRunningPerOwner?: number } = {},
): AgentHarness {
  const owners = createOwnerRegistry();
  const jobs = createJobService({ owners, onError: () => {}, ...jobOptions });
  // This harness's providers (the first, and each swapProvider()), all disposed by close().
  let current = createLocalProvider();
  const used = [current];
  const terminals = createTerminalService({
    owners,
    provider: () => current,
    defaults: { shell: '/bin/bash', cwd: '/', cleanupGraceMs: 500 },
  });
  const errors: ReportedError[] = [];
  const agents = createAgentService({
    owners,
    jobs,
    terminals,
    drainables: [terminals],
    onError: (error, where) => {
      errors.push({ error, ...where });
    },
    ...options,
  });
  const lifetime = new AbortController();
  const shell = (): ShellDeps => ({
    provider: () => current,
    lifetime: lifetime.signal,
    spillPool: null,
    defaults: { shell: '/bin/bash', cwd: '/', outputCapChars: 30_000, cleanupGraceMs: 500, drainMs: 500 },
  });
  return {
    owners,
    jobs,
    terminals,
    agents,
    errors,
    background: (agent, command, env) =>
      jobs.start(agent.owner, shellJobSpec(shell(), agent.owner, { command, ...(env ? { env } : {}) })),
    swapProvider() {
      current = createLocalProvider();
      used.push(current);
    },
    get providers() {
      return used.length;
    },
    async close() {
      await agents.dispose();
      lifetime.abort();
      await terminals.dispose();
      await jobs.dispose();
      // The providers are ours to dispose; each one's PTY worker must then be gone (D3).
      for (const p of used) await p.dispose();
      expect(used.map((p) => p.workers ?? 0)).toEqual(used.map(() => 0));
      expect(agents.stats()).toEqual(QUIESCENT);
      expect(terminals.stats()).toEqual(TERMINALS_QUIESCENT);
      expect(jobs.stats()).toMatchObject({
        running: 0,
        starting: 0,
        waiters: 0,
        timers: 0,
        listeners: 0,
        deliveries: 0,
      });
    },
  };
}

/** `AgentService.stats()` of a quiescent service (D3). */
export const QUIESCENT = {
  agents: 0,
  actors: 0,
  turns: 0,
  abandonedTurns: 0,
  listeners: 0,
  queued: 0,
  deliveries: 0,
  timers: 0,
  waiters: 0,
  errors: 0,
  reloads: 0,
} as const;

/** A turn the test holds open until it calls `end()` (or `fail()`). */
export interface HeldTurn {
  readonly turn: Turn;
  /** Every batch this turn claimed. */
  readonly batches: InboxItem[][];
  claim(): InboxItem[];
  end(): void;
  fail(error: Error): void;
}

/** An `onTurn` driver whose turns the test steps through one by one. */
export interface HeldDriver {
  onTurn(turn: Turn): Promise<void>;
  readonly turns: HeldTurn[];
  /** Resolves with turn number `n` (1-based) once it started. */
  turn(n: number): Promise<HeldTurn>;
}

// Turns stay open until the test ends them; `autoClaim` claims once at the start of each turn.
export function heldDriver(opts: { autoClaim?: boolean; autoEnd?: boolean } = {}): HeldDriver {
  const turns: HeldTurn[] = [];
  const waiting = new Map<number, (held: HeldTurn) => void>();
  return {
    turns,
    onTurn(turn) {
      return new Promise<void>((resolve, reject) => {
        const batches: InboxItem[][] = [];
        const held: HeldTurn = {
          turn,
          batches,
          claim() {
            const items = turn.inbox.claim();
            batches.push(items);
            return items;
          },
          end: () => resolve(),
          fail: (error) => reject(error),
        };
        turn.signal.addEventListener('abort', () => resolve(), { once: true });
        turns.push(held);
        if (opts.autoClaim) held.claim();
        waiting.get(turns.length)?.(held);
        if (opts.autoEnd) resolve();
      });
    },
    turn(n) {
      const held = turns[n - 1];
      if (held) return Promise.resolve(held);
      return new Promise((resolve) => waiting.set(n, resolve));
    },
  };
}

/** Job ids of every notice in `items`. */
export function noticeJobIds(items: readonly InboxItem[]): string[] {
  return items.flatMap((i) => (i.kind === 'notice' ? i.jobs.map((j) => j.id) : []));
}
