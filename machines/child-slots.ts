/**
 * Child ids by slot, for a parent whose children come and go (an owner's jobs, a shard's
 * owners). XState memoizes a state node's transitions for every event type it sees, for the
 * life of the machine, and a child that ends sends its parent `xstate.done.actor.<child id>`:
 * with a child id per job, each job ever run left its own memo entry (~330 bytes; 12,000 jobs
 * held 4 MB, P8). A child's id is its slot's (`<prefix><slot>`), and a slot is reused once its
 * child ended, so the event types a parent sees are bounded by how many children it held at once.
 *
 * The parent's context keeps what each slot holds (`slots[n]`, `null` where free).
 *
 * @example
 * ```ts
 * const slots = withKey([null, 'job_b'], 'job_c'); // ['job_c', 'job_b']: the first free slot
 * slotId('job#', slots.indexOf('job_c')); // 'job#0'
 * withoutSlot(slots, slotOfChild('job#', 'job#0')); // [null, 'job_b']
 * ```
 */
export type ChildSlots = readonly (string | null)[];

/** `slots` with `key` in the first free slot, or in a new one at the end. */
export function withKey(slots: ChildSlots, key: string): ChildSlots {
  const next = [...slots];
  const free = next.indexOf(null);
  next[free < 0 ? next.length : free] = key;
  return next;
}

/** `slots` with slot `slot` free. */
export function withoutSlot(slots: ChildSlots, slot: number): ChildSlots {
  return slots.map((key, at) => (at === slot ? null : key));
}

/** The child id of slot `slot`. */
export function slotId(prefix: string, slot: number): string {
  return `${prefix}${slot}`;
}

/** The slot a child id names (`job#2` → 2). */
export function slotOfChild(prefix: string, childId: string): number {
  return Number(childId.slice(prefix.length));
}

/**
 * The child whose slot holds `key` (its id `<prefix><slot>`), or undefined when no slot does.
 *
 * @example
 * ```ts
 * childOfKey(snapshot.children, snapshot.context.running, 'job#', 'job_a'); // children['job#0']
 * ```
 */
export function childOfKey<T>(
  children: Readonly<Record<string, T | undefined>>,
  slots: ChildSlots,
  prefix: string,
  key: string,
): T | undefined {
  const slot = slots.indexOf(key);
  return slot < 0 ? undefined : children[slotId(prefix, slot)];
}
