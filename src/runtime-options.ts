import { accessSync, constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { InspectionEvent } from 'xstate';
import { assertArgument, TetherError } from './errors.js';
import type { LogOption } from './observe/fact-log.js';
import { type PersistOptions, type ResolvedPersist, resolvePersist } from './persist/persist-options.js';
import type { Policy } from './policy/policy-types.js';
import { assertRuntimeOptions } from './runtime-schema.js';
import type { IsolationMode, SandboxOptions } from './sandbox/sandbox-types.js';
import { defaultStateDir } from './subprocess/containment/runtime-boundary.js';
import { assertFilesystemPath } from './subprocess/containment/state-dir.js';
import type { EnvPolicy } from './subprocess/env.js';
import type { SubprocessProvider } from './subprocess/types.js';
import type { ToolRegistryOptions } from './tools/tool-types.js';

/**
 * Everything `createRuntime` can be told. Every field is optional; defaults are listed.
 */
export interface RuntimeOptions {
  /**
   * The execution seam (S2); default: processes and PTYs on this machine. The runtime owns it
   * from then on: `rt.dispose()` calls its `dispose` (if any) after every process is gone.
   */
  readonly provider?: SubprocessProvider;
  /**
   * A3: the sandbox every owner's processes run in (an agent or host owner may override it);
   * default `{ mode: 'off' }`. A sandbox this machine cannot give rejects SANDBOX_UNAVAILABLE.
   */
  readonly sandbox?: SandboxOptions;
  /** K5: `'pid'` gives every owner a PID namespace of its own; default `'none'`. */
  readonly isolation?: IsolationMode;
  /**
   * Where complete outputs are spilled; default `<tmpdir>/tether-spill`. Each runtime writes in a
   * directory of its own below it (`tether-<runtime id>`), removed on dispose (K4); a spill kept
   * with `keepSpill` goes to this directory itself. `false`: never spill (tail only).
   */
  readonly spillDir?: string | false;
  /**
   * C2, G: `durable: true` fsyncs each spill and its directory before its path is published,
   * so a published spill also survives an OS crash or power loss (a kept spill outlives the
   * runtime). Default false: the atomic rename alone makes a spill complete-or-absent.
   */
  readonly spill?: { readonly durable?: boolean };
  /**
   * K1: the boundary of every process tree. Default: the strongest available — `cgroup` where
   * a writable cgroup v2 hierarchy exists (root, or a delegated subtree), else `marker`.
   * `'cgroup'` fails with CONTAINMENT_UNAVAILABLE (naming what is missing) where it is not.
   * `rt.stats().containment` says which is in force.
   */
  readonly containment?: 'cgroup' | 'marker';
  /**
   * K3: where the runtime records itself (synced, before its first spawn) so that a successor
   * can reap what it left after a crash; default `<tmpdir>/tether-state-<uid>` (one per user).
   * Every runtime started with it reaps the dead runtimes recorded there (`rt.recovered`).
   */
  readonly stateDir?: string;
  /**
   * K6: run this runtime's processes under a local helper daemon named `name` (per user, below
   * `stateDir`), so they outlive this process: a runtime started later with the same name lists
   * them (`rt.resumable()`) and adopts them; what nobody adopts within `lingerMs` (default
   * 300,000) is killed. A second live runtime of the name is PERSIST_IN_USE. docs/persist.md.
   */
  readonly persist?: PersistOptions;
  /** Default cwd for commands; default `process.cwd()`. */
  readonly cwd?: string;
  /** Default shell for `-c`; default `/bin/bash`. */
  readonly shell?: string;
  /**
   * S1: how many nice levels (0–19) below this process local trees run. Default 10: when the
   * trees take every CPU, the runtime's event loop — which carries their output, exits and
   * kills — still runs first (issue 30.6). Every `shell.run` and job tree runs at that nice, its
   * session's autogroup too; where a cgroup v1 `cpu` hierarchy can be written (root on a hybrid
   * host), all trees, terminals included, also share one CPU group `tether-<runtimeId>` that
   * weighs what one process at that nice weighs (cpu-group.ts). 0 runs them at the runtime's own
   * priority and makes no group.
   */
  readonly nice?: number;
  /** How the host env is cleaned for children (S3). */
  readonly env?: EnvPolicy;
  /**
   * Receives every XState inspection event of the runtime's actor systems (agents, routers,
   * jobs, terminals): pass `createBrowserInspector().inspect` from `@statelyai/inspect`, or a
   * function that logs them offline. Off by default.
   */
  readonly inspect?: (event: InspectionEvent) => void;
  /** The model tools (`rt.tools`, `agent.tools`): `persistentBash`, `outputBudgetChars`. */
  readonly tools?: ToolRegistryOptions;
  /**
   * A1/A2: decided before anything starts (rules, an approver, a default); an agent's own
   * (`agents.create({ policy })`) replaces it. None (the default): everything is allowed,
   * and escalation (A4) is denied.
   */
  readonly policy?: Policy;
  /**
   * V1: write the fact stream to this JSONL file (truncated at start), or `{ path, inspection:
   * true }` to add the inspection events. Format and drop policy: docs/FACTS.md.
   */
  readonly log?: LogOption;
  readonly limits?: {
    /** Characters of output kept in a shell result; default 30,000. */
    readonly outputCapChars?: number;
    /** ms between SIGTERM and SIGKILL in a tree kill; default 2,000. */
    readonly cleanupGraceMs?: number;
    /** ms to wait for stdio to close after a command's shell exited; default 500. */
    readonly drainMs?: number;
    /** J4: running background jobs per owner; default 8. */
    readonly maxJobsPerOwner?: number;
    /** J5: characters of output a job retains for its reader; default 1,048,576. */
    readonly jobRetentionChars?: number;
    /**
     * Unread output the finished jobs of one owner keep together; default 16,777,216 chars.
     * Past it the oldest finished jobs' oldest output is dropped (reads say `lossy`).
     */
    readonly finishedJobRetentionChars?: number;
    /** Open terminals per owner; default 8. */
    readonly maxTerminalsPerOwner?: number;
    /** T3: characters of output a terminal retains for `read`; default 1,048,576. */
    readonly terminalRetentionChars?: number;
    /** W1: completions within this many ms coalesce into one agent notice; default 50. */
    readonly quietWindowMs?: number;
    /** D1: how long an agent's teardown waits for its aborted turn; default 5,000. */
    readonly turnGraceMs?: number;
    /** K4: bytes of spill files the runtime holds at most; the oldest go first. Default 1 GiB. */
    readonly spillBudgetBytes?: number;
  };
}

export interface ResolvedOptions {
  readonly provider: SubprocessProvider | undefined;
  readonly sandbox: SandboxOptions | undefined;
  readonly isolation: IsolationMode | undefined;
  readonly spillDir: string | false;
  readonly spillDurable: boolean;
  readonly containment: 'auto' | 'cgroup' | 'marker';
  readonly stateDir: string;
  readonly persist: ResolvedPersist | undefined;
  readonly spillBudgetBytes: number;
  readonly cwd: string;
  readonly shell: string;
  readonly nice: number;
  readonly env: EnvPolicy;
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  readonly tools: ToolRegistryOptions;
  readonly policy: Policy | undefined;
  readonly log: LogOption | undefined;
  readonly outputCapChars: number;
  readonly cleanupGraceMs: number;
  readonly drainMs: number;
  readonly maxJobsPerOwner: number;
  readonly jobRetentionChars: number;
  readonly finishedJobRetentionChars: number;
  readonly maxTerminalsPerOwner: number;
  readonly terminalRetentionChars: number;
  readonly quietWindowMs: number;
  readonly turnGraceMs: number;
}

/** Fills defaults and rejects nonsense with INVALID_ARGUMENT naming the option (R). */
export function resolveOptions(options: RuntimeOptions = {}): ResolvedOptions {
  assertArgument(typeof options === 'object' && options !== null, 'createRuntime options must be an object');
  assertRuntimeOptions(options); // one schema: no option is silently accepted (R)
  const limits = options.limits ?? {};
  const resolved: ResolvedOptions = {
    provider: options.provider,
    sandbox: options.sandbox,
    isolation: options.isolation,
    spillDir: options.spillDir ?? join(tmpdir(), 'tether-spill'),
    spillDurable: options.spill?.durable ?? false,
    containment: options.containment ?? 'auto',
    stateDir: options.stateDir ?? defaultStateDir(),
    persist: options.persist === undefined ? undefined : resolvePersist(options.persist),
    spillBudgetBytes: limits.spillBudgetBytes ?? 1 << 30,
    cwd: options.cwd ?? process.cwd(),
    shell: options.shell ?? '/bin/bash',
    nice: options.nice ?? 10,
    env: options.env ?? {},
    inspect: options.inspect,
    tools: options.tools ?? {},
    policy: options.policy,
    log: options.log,
    outputCapChars: limits.outputCapChars ?? 30_000,
    cleanupGraceMs: limits.cleanupGraceMs ?? 2_000,
    drainMs: limits.drainMs ?? 500,
    maxJobsPerOwner: limits.maxJobsPerOwner ?? 8,
    jobRetentionChars: limits.jobRetentionChars ?? 1_048_576,
    finishedJobRetentionChars: limits.finishedJobRetentionChars ?? 16_777_216,
    maxTerminalsPerOwner: limits.maxTerminalsPerOwner ?? 8,
    terminalRetentionChars: limits.terminalRetentionChars ?? 1_048_576,
    quietWindowMs: limits.quietWindowMs ?? 50,
    turnGraceMs: limits.turnGraceMs ?? 5_000,
  };
  assertArgument(
    resolved.spillDir === false || (typeof resolved.spillDir === 'string' && resolved.spillDir.length > 0),
    'spillDir must be a directory path, or false to never spill',
  );
  assertArgument(
    typeof resolved.spillDurable === 'boolean',
    'spill.durable must be true or false (true: fsync each spill before publishing it)',
  );
  assertArgument(
    options.containment === undefined || options.containment === 'cgroup' || options.containment === 'marker',
    `containment must be 'cgroup' or 'marker' (or left out for the best available), got ${String(options.containment)}`,
  );
  assertArgument(
    typeof resolved.stateDir === 'string' && resolved.stateDir.length > 0,
    'stateDir must be a directory path',
  );
  // Before anything makes them: Node 20's recursive mkdirSync never returns below /proc.
  assertFilesystemPath(resolved.stateDir, 'stateDir');
  if (resolved.spillDir !== false) assertFilesystemPath(resolved.spillDir, 'spillDir');
  assertPositiveInteger('limits.spillBudgetBytes', resolved.spillBudgetBytes, 0);
  assertArgument(
    resolved.inspect === undefined || typeof resolved.inspect === 'function',
    'inspect must be a function receiving inspection events',
  );
  for (const key of ['cwd', 'shell'] as const) {
    assertArgument(
      typeof resolved[key] === 'string' && resolved[key].length > 0,
      `${key} must be a non-empty string`,
    );
  }
  assertArgument(
    resolved.persist === undefined ||
      (resolved.provider === undefined && resolved.sandbox === undefined && resolved.isolation === undefined),
    'createRuntime options: persist runs every process under its own local helper; it cannot be combined with provider, sandbox or isolation (yet)',
  );
  if (resolved.provider !== undefined) assertProvider(resolved.provider, 'provider');
  // A provider of its own (ssh, a container) has its own filesystem: only local paths are checked.
  else assertLocalPlaces(resolved.cwd, resolved.shell);
  assertPositiveInteger('limits.outputCapChars', resolved.outputCapChars, 200);
  assertPositiveInteger('limits.cleanupGraceMs', resolved.cleanupGraceMs, 0);
  assertPositiveInteger('limits.drainMs', resolved.drainMs, 0);
  assertPositiveInteger('limits.maxJobsPerOwner', resolved.maxJobsPerOwner, 1);
  assertPositiveInteger('limits.jobRetentionChars', resolved.jobRetentionChars, 1);
  assertPositiveInteger('limits.finishedJobRetentionChars', resolved.finishedJobRetentionChars, 1);
  assertPositiveInteger('limits.maxTerminalsPerOwner', resolved.maxTerminalsPerOwner, 1);
  assertPositiveInteger('limits.terminalRetentionChars', resolved.terminalRetentionChars, 1);
  assertPositiveInteger('limits.quietWindowMs', resolved.quietWindowMs, 0);
  assertPositiveInteger('limits.turnGraceMs', resolved.turnGraceMs, 0);
  return resolved;
}

/**
 * Checks that `value` looks like a {@link SubprocessProvider} (S2), naming `what` in the error.
 *
 * @example
 * ```ts
 * assertProvider(next, 'reload({ provider })');
 * ```
 */
export function assertProvider(value: unknown, what: string): asserts value is SubprocessProvider {
  const candidate = value as Partial<SubprocessProvider> | null;
  assertArgument(
    typeof candidate === 'object' &&
      candidate !== null &&
      typeof candidate.spawn === 'function' &&
      typeof candidate.spawnTerminal === 'function' &&
      typeof candidate.name === 'string',
    `${what} must be a SubprocessProvider: an object with a string 'name' and spawn(spec) and spawnTerminal(spec) methods`,
  );
}

// The default cwd must be a directory and the default shell an executable file (R), so a typo
// fails here and not as every command's exit 127.
function assertLocalPlaces(cwd: string, shell: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(cwd).isDirectory();
  } catch {}
  if (!isDirectory)
    throw new TetherError(
      'CWD_NOT_FOUND',
      `cwd ${cwd} is not a directory; pass an existing one (default: process.cwd())`,
    );
  const candidates = shell.includes('/')
    ? [shell]
    : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir || '.', shell));
  const found = candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
  assertArgument(
    found,
    `shell ${shell} is not an executable file; pass a path such as /bin/bash (the default)`,
  );
}

function assertPositiveInteger(name: string, value: number, min: number): void {
  assertArgument(
    Number.isSafeInteger(value) && value >= min,
    `${name} must be an integer >= ${min}, got ${String(value)}`,
  );
}
