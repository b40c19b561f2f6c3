/** Bytes per slab: a few pipe reads (64 KiB each), so a job's retention holds a handful. */
export const SLAB_BYTES = 131_072;
// Idle slabs kept for reuse (8 MiB): enough for the floods of 64 jobs to recycle rather than
// allocate, little enough to be nothing when idle.
const POOL_MAX = 64;
const pool: Buffer[] = [];

/**
 * A slab for copied output bytes: recycled from the pool when one is free. A flood copied into
 * recycled slabs allocates no backing store per read, so V8 sees no external-memory pressure
 * from it (the scavenges and mark-compacts that per-read buffers drive, issue 30.6).
 *
 * @example
 * ```ts
 * const slab = takeSlab();
 * slab.set(bytes, 0);
 * giveSlab(slab); // once nothing refers to its bytes any more
 * ```
 */
export function takeSlab(): Buffer {
  return pool.pop() ?? Buffer.allocUnsafeSlow(SLAB_BYTES);
}

/** Returns a slab nothing refers to any more; beyond the pool's size it is left to the GC. */
export function giveSlab(slab: Buffer): void {
  if (pool.length < POOL_MAX && slab.length === SLAB_BYTES) pool.push(slab);
}

/** Idle slabs in the pool (for tests). */
export function idleSlabs(): number {
  return pool.length;
}
