import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TetherError } from '../errors.js';
import { openExecLink } from '../remote/exec-link.js';
import { createHelperProvider, type HelperProvider } from '../remote/helper-provider.js';
import { assertTrustedStateDir } from '../subprocess/containment/state-trust.js';
import { DEFAULT_IDENTITY_PREFIX, type EnvPolicy } from '../subprocess/env.js';
import type { SubprocessSpawnSpec, TerminalSpawnSpec, TreeKillVerdict } from '../subprocess/types.js';
import { persistDir } from './persist-options.js';
import { type ListedTree, listedTree } from './persisted-tree.js';

/** What {@link openPersistHelper} needs. */
export interface PersistHelperOptions {
  readonly stateDir: string;
  readonly name: string;
  readonly lingerMs: number;
  readonly env?: EnvPolicy;
  /** The identity env prefix (S3): a job's id and an agent's session are read from its env. */
  readonly identityPrefix?: string;
  /** Output bytes the helper keeps of each job and terminal for a successor (their retention). */
  readonly keepBytes: { readonly job: number; readonly terminal: number };
  /** Claim the helper for this runtime (PERSIST_IN_USE for a second one); `tether reap` does not. */
  readonly exclusive: boolean;
  /** A tree nobody adopted within `lingerMs` was killed: its actor (`job:<id>`) and verdict. */
  onLingered?(actor: string, verdict: TreeKillVerdict): void;
}

/** The helper of a persisted runtime: its provider, its directory, and what it holds. */
export interface PersistHelper {
  readonly provider: HelperProvider;
  readonly dir: string;
  /** The daemon's pid (from its `helper.pid`), once connected. */
  readonly daemonPid: number | null;
  /** Every tagged tree the helper holds that no client holds now (K6). */
  list(): Promise<ListedTree[]>;
}

/**
 * Opens (and on first use starts) the helper daemon of persisted runtime `name` (K6): the remote
 * helper itself, run on this machine over the exec transport (`env python3 -c <bootstrap>`),
 * with its socket in `<stateDir>/persist/<name>` (mode 0700, this user's: a directory anyone
 * else could write is refused, as the reaper refuses one, STATE_UNTRUSTED). Its trees carry
 * `persist.` markers, never this process's: a successor's crash recovery (K3) leaves them
 * alone. Connects at once, so a name in use by another live runtime rejects PERSIST_IN_USE here.
 *
 * @example
 * ```ts
 * const helper = await openPersistHelper({ stateDir, name: 'ci', lingerMs: 60_000,
 *   keepBytes: { job: 1 << 20, terminal: 1 << 20 }, exclusive: true });
 * const survivors = await helper.list();
 * ```
 */
export async function openPersistHelper(options: PersistHelperOptions): Promise<PersistHelper> {
  const dir = persistDir(options.stateDir, options.name);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new TetherError(
      'STATE_DIR_UNUSABLE',
      `cannot make the persisted runtime's directory ${dir}: ${(err as Error).message}`,
    );
  }
  assertTrustedStateDir(dir);
  const label = `persist:${options.name}`;
  const prefix = (options.identityPrefix || DEFAULT_IDENTITY_PREFIX).toUpperCase();
  const random = randomBytes(6).toString('base64url');
  let sequence = 0;
  const claim = { id: `${process.pid}.${random}`, pid: process.pid, name: options.name };
  const provider = createHelperProvider({
    name: 'persist',
    label,
    kind: 'local helper link',
    open: () => openExecLink({ argv: ['/usr/bin/env'], at: label, helperDir: dir, connectTimeoutMs: 10_000 }),
    lingerMs: options.lingerMs,
    reconnectAttempts: 3,
    reconnectDelayMs: 200,
    byeBoundMs: 5_000,
    connectBoundMs: 10_000,
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.exclusive ? { hello: { exclusive: claim } } : {}),
    treeId: () => `persist.${options.name}.${random}.${++sequence}`,
    onEvent: (message) => {
      const meta = message.meta as Record<string, unknown> | null;
      if (message.ev === 'lingered' && meta !== null && typeof meta === 'object')
        options.onLingered?.(`${String(meta.kind)}:${String(meta.id)}`, message.verdict as TreeKillVerdict);
    },
    spawnFields: (spec) => {
      const terminal = 'cols' in spec;
      return {
        meta: tagOf(spec, prefix),
        keep: terminal ? options.keepBytes.terminal : options.keepBytes.job,
        merge: true,
      };
    },
  });
  let daemonPid: number | null = null;
  const helper: PersistHelper = {
    provider,
    dir,
    get daemonPid() {
      return daemonPid;
    },
    async list() {
      const reply = await provider.request({ op: 'list' });
      const trees = (reply.trees as Record<string, unknown>[]).filter((t) => t.attached !== true);
      return trees.map(listedTree).filter((t): t is ListedTree => t !== null);
    },
  };
  try {
    await helper.list(); // connects: PERSIST_IN_USE, or a helper that cannot start, fails here
    daemonPid = Number(readFileSync(join(dir, 'helper.pid'), 'utf8')) || null;
  } catch (err) {
    await provider.dispose();
    throw err;
  }
  return helper;
}

// What the helper keeps with a tree: a terminal's tag, or a background job's id from its env
// (S3: the registry puts it there before the spawn); the owner from the agent session in it.
// A one-shot command has neither and is not adoptable.
function tagOf(
  spec: SubprocessSpawnSpec | TerminalSpawnSpec,
  prefix: string,
): Record<string, unknown> | null {
  const env = spec.env ?? {};
  const session = env[`${prefix}SESSION_ID`];
  const owner = session === undefined ? 'host' : `session:${session}`;
  if (spec.tag !== undefined) return { ...spec.tag, owner };
  const jobId = env[`${prefix}JOB_ID`];
  if (jobId === undefined) return null;
  return { kind: 'job', id: jobId, label: spec.argv[spec.argv.length - 1], owner };
}

/**
 * Resolves once the helper ended and took its directory with it (after its last tree
 * was killed and its last client left), or after `boundMs` (then false): dispose waits for it,
 * so a persisted runtime leaves no daemon behind.
 *
 * @example
 * ```ts
 * await helper.provider.dispose(); await helperGone(helper, 5000);
 * ```
 */
export async function helperGone(helper: PersistHelper, boundMs: number): Promise<boolean> {
  const until = performance.now() + boundMs;
  const pid = helper.daemonPid;
  while (existsSync(helper.dir) || (pid !== null && existsSync(`/proc/${pid}`))) {
    if (performance.now() >= until) return false;
    await sleep(20);
  }
  return true;
}
