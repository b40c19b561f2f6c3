import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { readIdentity } from '../../src/subprocess/identity.js';
import { newTreeId, TREE_MARKER_ENV } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import type { TreeTarget } from '../../src/subprocess/tree-kill.js';

/** A real detached process tree started for a test, tagged with its own tree id. */
export interface SpawnedTree {
  readonly child: ChildProcess;
  readonly treeId: string;
  readonly target: TreeTarget;
  /** Everything the leader wrote to stdout so far. */
  stdout(): string;
  /** Resolves when the leader has exited (and been reaped by Node). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const spawned = new Set<string>();
const leaders = new Set<ChildProcess>();

/**
 * Spawns `argv` detached (its own group and session, like the local provider) with a fresh
 * `TETHER_TREE` marker. Pass `marker: false` for an untagged helper process.
 */
export function spawnTree(
  argv: readonly [string, ...string[]],
  opts: { marker?: boolean } = {},
): SpawnedTree {
  const treeId = newTreeId();
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (opts.marker === false) delete env[TREE_MARKER_ENV];
  else env[TREE_MARKER_ENV] = treeId;
  const [file, ...args] = argv;
  const child = spawn(file, args, { detached: true, env, stdio: ['ignore', 'pipe', 'inherit'] });
  spawned.add(treeId);
  leaders.add(child);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`spawn failed: ${argv.join(' ')}`);
  const identity = readIdentity(pid);
  if (identity === null) throw new Error(`no identity for fresh child ${pid}`);
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, treeId, target: { root: identity, treeId }, stdout: () => out, exited };
}

/** Polls `probe` every 20 ms until it returns something truthy; throws after `timeoutMs`. */
export async function waitFor<T>(probe: () => T, what: string, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Live processes carrying exactly this tree's marker. */
export function tagged(treeId: string): number[] {
  return listTaggedProcesses(treeId).filter((pid) => pid !== process.pid);
}

/**
 * Brute-force cleanup for afterEach: SIGKILL every process still tagged by a tree spawned
 * here, and the group of every leader not yet reaped (its pgid cannot have been reused).
 */
export function killSpawnedTrees(): void {
  for (const child of leaders) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  leaders.clear();
  for (const treeId of spawned) {
    for (const pid of listTaggedProcesses(treeId)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  spawned.clear();
}
