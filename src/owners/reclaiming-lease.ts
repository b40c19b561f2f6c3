import type { OwnerLease } from './owner-registry.js';
import type { AgentOwnerToken } from './owner-token.js';

/**
 * What retiring an owner asks of its runtime: reclaim its terminals, jobs and placement. The
 * runtime sets `reclaim` to `null` when its dispose begins (dispose drains every owner anyway).
 */
export interface Reclaimer {
  reclaim: ((owner: AgentOwnerToken) => void) | null;
}

/**
 * A lease whose `retire()` also reclaims the owner's resources (O2 with D1's reclaim: an owner
 * that ended never leaves its processes running until dispose).
 *
 * It is made here, outside the runtime's closure, and reaches the runtime only through
 * `reclaimer`: a lease an agent keeps after `rt.dispose()` holds nothing of the runtime. Made
 * inside it, 1,000 kept leases held the whole disposed runtime (3.4 MiB of heap, P8).
 *
 * @example
 * ```ts
 * const reclaimer: Reclaimer = { reclaim: (owner) => void drain(owner) };
 * const lease = reclaimingLease(owners.host(), reclaimer);
 * lease.retire(); // reclaims; after dispose set reclaimer.reclaim = null
 * ```
 */
export function reclaimingLease(lease: OwnerLease, reclaimer: Reclaimer): OwnerLease {
  return {
    token: lease.token,
    get retired() {
      return lease.retired;
    },
    retire() {
      if (lease.retired) return;
      lease.retire();
      reclaimer.reclaim?.(lease.token);
    },
  };
}
