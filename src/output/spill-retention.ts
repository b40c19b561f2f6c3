import { renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

/** Why a spill file is gone: the total budget needed the room, or the runtime was disposed. */
export type SpillRemoval = 'budget' | 'disposed';

/** A published spill as the runtime keeps track of it (K4). */
export interface SpillRef {
  /** Where the complete output is (or was). */
  readonly path: string;
  /** `null` while the file is there. */
  readonly removed: SpillRemoval | null;
}

/** The spills of one runtime: bounded in total, removed on dispose unless kept (K4). */
export interface SpillRetention {
  /**
   * Takes over a published spill. `keep`: the caller keeps it — it is moved out of the
   * runtime's spill directory into the spill root and never removed by Tether.
   */
  adopt(path: string, opts: { readonly keep: boolean }): SpillRef;
  /** Spill files held now, and their bytes. */
  readonly files: number;
  readonly bytes: number;
  /** Removes every spill not kept, and the runtime's spill directory (dispose). */
  removeAll(): void;
}

interface Held {
  path: string;
  bytes: number;
  removed: SpillRemoval | null;
}

/**
 * Spill retention (K4): every spill belongs to the call that produced it; the runtime holds
 * it until dispose (removed then, unless `keep`), and `budgetBytes` bounds the total — the
 * oldest go first. A removed spill's ref says so (`removed`), so a result never points at a
 * missing file without saying why.
 *
 * @example
 * ```ts
 * const retention = createSpillRetention({ dir: '/tmp/tether-spill/tether-r1', root: '/tmp/tether-spill', budgetBytes: 1 << 30 });
 * const ref = retention.adopt(outcome.path, { keep: false });
 * retention.removeAll(); // ref.removed === 'disposed'
 * ```
 */
export function createSpillRetention(opts: {
  readonly dir: string;
  readonly root: string;
  readonly budgetBytes: number;
}): SpillRetention {
  const held: Held[] = []; // oldest first
  let bytes = 0;
  const remove = (spill: Held, why: SpillRemoval) => {
    removeQuietly(spill.path);
    spill.removed = why;
    bytes -= spill.bytes;
  };
  return {
    adopt(path, { keep }) {
      if (keep) {
        const kept = join(opts.root, basename(path));
        renameSync(path, kept);
        return { path: kept, removed: null };
      }
      let size = 0;
      try {
        size = statSync(path).size;
      } catch {}
      const spill: Held = { path, bytes: size, removed: null };
      held.push(spill);
      bytes += size;
      while (bytes > opts.budgetBytes && held.length > 0) remove(held.shift()!, 'budget');
      return spill;
    },
    get files() {
      return held.length;
    },
    get bytes() {
      return bytes;
    },
    removeAll() {
      for (const spill of held.splice(0)) remove(spill, 'disposed');
      removeQuietly(opts.dir);
    },
  };
}

// Removal is best effort: a spill dir made unwritable under us must not fail a dispose.
function removeQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {}
}
