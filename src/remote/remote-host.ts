import { TetherError } from '../errors.js';
import type { ProcessIdentity, TreeKillVerdict, TreeProof } from '../subprocess/types.js';

/**
 * What a remote handle needs from its provider: calls to the helper (which wait for a
 * reconnect in progress and reject PROVIDER_LOST when the host is gone), and its release.
 */
export interface RemoteHost {
  /** `user@host:port`, for messages. */
  readonly label: string;
  /** Whether the link to the helper is up now (false while a reconnect is under way). */
  readonly connected: boolean;
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
  notify(message: Record<string, unknown>): void;
  input(n: number, bytes: Buffer): Promise<void>;
  /** The handle is done with the helper (exit seen, tree swept): the provider drops it. */
  release(n: number, tree: string): void;
  /**
   * A kill could not reach the host (X3): the tree ends now with `reason` (its owner does not
   * wait out a reconnect) and is killed by marker the next time the host is reached.
   */
  abandon(n: number, tree: string, reason: string): void;
}

/** A tree the provider routes helper frames to, and re-attaches after a reconnect (X3). */
export interface RemoteTree {
  readonly n: number;
  readonly treeId: string;
  data(stream: number, offset: number, bytes: Buffer): void;
  event(message: Record<string, unknown>): void;
  /** Bytes received so far per stream: where a re-attach resumes. */
  cursors(): Record<string, number>;
  /** Re-attach failed or the host is gone: the tree ends with `reason`. */
  lost(reason: string): void;
}

/**
 * Where one numbered output stream stands (X3): drops what a replay repeats, acknowledges what
 * was consumed so the helper can forget it and send more.
 *
 * @example
 * ```ts
 * const cursor = createCursor((offset) => host.notify({ op: 'ack', n, stream: 1, offset }));
 * const fresh = cursor.accept(offset, bytes); // null when all of it was seen before
 * ```
 */
export function createCursor(ack: (offset: number) => void, from = 0) {
  // `from`: an adopted tree's output resumes there (K6), not at its first byte.
  let received = from;
  let acked = from;
  // Who waits for `received` to reach an offset (K6: an adopted tree's replay), until the end.
  let waiting: { readonly offset: number; readonly resolve: () => void }[] = [];
  let over = false;
  return {
    get received() {
      return received;
    },
    accept(offset: number, bytes: Buffer): Buffer | null {
      const end = offset + bytes.length;
      if (end <= received || offset > received) return null;
      const fresh = bytes.subarray(received - offset);
      received = end;
      if (waiting.length > 0) {
        for (const w of waiting) if (w.offset <= received) w.resolve();
        waiting = waiting.filter((w) => w.offset > received);
      }
      return fresh;
    },
    /** Resolves once `offset` bytes were received, or the stream ended first. */
    until(offset: number): Promise<void> {
      if (over || received >= offset) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ offset, resolve }));
    },
    /** Nothing more comes (the stream ended, the tree was lost): every `until` resolves. */
    end(): void {
      over = true;
      for (const w of waiting) w.resolve();
      waiting = [];
    },
    /**
     * Acknowledges everything received, in steps of 256 KiB so acks stay few: the helper stops
     * only at its 4 MiB window, so a step always comes before it waits.
     */
    consumed() {
      if (received - acked >= 256 * 1024) {
        acked = received;
        ack(acked);
      }
    },
  };
}

/** The leader named in the helper's `spawn` reply (pid and /proc start time). */
export function identityOf(reply: Record<string, unknown>): ProcessIdentity {
  return { pid: reply.pid as number, startTime: (reply.start as number | null) ?? null };
}

/** The helper's verdict object as the seam's type. */
export function toVerdict(reply: Record<string, unknown>): TreeKillVerdict {
  return reply.verdict as TreeKillVerdict;
}

/**
 * The `kill()` of a remote job or terminal (S4, X2): one request at a time (a second call
 * shares the one in flight), PROVIDER_LOST once the tree is lost, and a quiescent verdict only
 * after `exited` resolved.
 *
 * @example
 * ```ts
 * const kill = remoteTreeKill(host, { n, treeId, what: 'tree', graceMs, exited, lost: () => lostReason, gone: () => gone });
 * ```
 */
export function remoteTreeKill(
  host: RemoteHost,
  tree: {
    readonly treeId: string;
    /** How errors name it: `tree` or `terminal`. */
    readonly what: string;
    readonly graceMs: number;
    readonly exited: Promise<unknown>;
    readonly n: number;
    /** Why the tree is lost, or null while it is reachable. */
    readonly lost: () => string | null;
    /**
     * How the helper proved at exit that nothing of the tree is left (its cgroup empty, or no
     * orphan of it adopted: proof `proc`), or null: with a proof the verdict needs no request.
     */
    readonly gone: () => TreeProof | null;
  },
): () => Promise<TreeKillVerdict> {
  let inFlight: Promise<TreeKillVerdict> | null = null;
  return () => {
    inFlight ??= (async () => {
      const goneBy = tree.gone();
      if (goneBy !== null) {
        await tree.exited;
        return { status: 'quiescent', proof: goneBy, killed: 0 } as const;
      }
      const lostReason = tree.lost();
      if (lostReason !== null) {
        throw new TetherError(
          'PROVIDER_LOST',
          `remote ${tree.what} ${tree.treeId} on ${host.label} is lost: ${lostReason}`,
        );
      }
      if (!host.connected) {
        // A kill does not wait out the reconnect attempts (a dispose would be held for them):
        // the tree is the orphan sweep's of the connection that comes back (X3).
        const why = `the link to ${host.label} is down; it is killed when the host is reached again`;
        host.abandon(tree.n, tree.treeId, why);
        throw new TetherError('PROVIDER_LOST', `remote ${tree.what} ${tree.treeId} is lost: ${why}`);
      }
      const reply = await host.request({ op: 'kill', tree: tree.treeId, graceMs: tree.graceMs });
      const verdict = toVerdict(reply);
      if (verdict.status === 'quiescent') await tree.exited;
      return verdict;
    })().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };
}
