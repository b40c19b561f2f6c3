import type { AdoptedTree } from '../remote/helper-provider.js';

/** One job or terminal a previous runtime of this name left running (K6, `rt.resumable()`). */
export interface PersistedTree {
  readonly kind: 'job' | 'terminal';
  /** Its id in the previous runtime, kept when adopted. */
  readonly id: string;
  /** The command of a job, the shell of a terminal. */
  readonly label: string;
  /** Its previous owner: `session:<sessionId>` for an agent's, `host` for a host lease's. */
  readonly owner: string;
  /** `exited`: it ended after its runtime went away; adopting it reports its exit once. */
  readonly state: 'running' | 'exited';
  readonly exit: { readonly exitCode: number | null; readonly signal: string | null } | null;
  /**
   * The first output character it still holds: a `read` from this cursor or any later one
   * continues exactly where that position was in the previous runtime (earlier ones say `dropped`).
   */
  readonly cursor: number;
  /** Its leader's pid. */
  readonly pid: number;
}

/** A listed tree with what an adopt needs beside the public fields. */
export interface ListedTree extends PersistedTree {
  readonly tree: AdoptedTree;
  /** A terminal's window, as it was opened. */
  readonly cols: number;
  readonly rows: number;
}

/**
 * One entry of the helper's `list` reply as a {@link ListedTree}, or null when it carries no
 * tag a runtime gave it (a one-shot command's tree: nobody adopts those).
 *
 * @example
 * ```ts
 * const trees = reply.trees.map(listedTree).filter((t) => t !== null);
 * ```
 */
export function listedTree(entry: Record<string, unknown>): ListedTree | null {
  const meta = entry.meta as Record<string, unknown> | null;
  if (meta === null || typeof meta !== 'object') return null;
  const kind = meta.kind;
  if ((kind !== 'job' && kind !== 'terminal') || typeof meta.id !== 'string') return null;
  const streams = (entry.streams ?? {}) as Record<string, { base: number; baseChars: number; total: number }>;
  const cursors = Object.fromEntries(Object.entries(streams).map(([sid, s]) => [sid, s.base]));
  const ends = Object.fromEntries(Object.entries(streams).map(([sid, s]) => [sid, s.total]));
  const cursor = Object.values(streams).reduce((n, s) => n + s.baseChars, 0);
  const exit = entry.exit as { code: number | null; signal: string | null } | null;
  return {
    kind,
    id: meta.id,
    label: String(meta.label ?? ''),
    owner: String(meta.owner ?? 'host'),
    state: exit === null ? 'running' : 'exited',
    exit: exit === null ? null : { exitCode: exit.code, signal: exit.signal },
    cursor,
    pid: entry.pid as number,
    cols: Number(meta.cols ?? 120),
    rows: Number(meta.rows ?? 40),
    tree: {
      treeId: entry.tree as string,
      pid: entry.pid as number,
      start: (entry.start as number | null) ?? null,
      tty: (entry.tty as string | null) ?? null,
      cursors,
      ends,
    },
  };
}
