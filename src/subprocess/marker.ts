import { randomBytes } from 'node:crypto';

/**
 * The inherited env variable that tags every process of a tree we spawned. A process that
 * escapes the process group (setsid, double fork, nohup) still carries it in
 * /proc/<pid>/environ, which is how the tree kill finds it (S4).
 */
export const TREE_MARKER_ENV = 'TETHER_TREE';

// Tree ids only need to be unique, not secret: one random part per process, then a counter.
const processPart = randomBytes(6).toString('base64url');
let sequence = 0;

/** `<host pid>.<random>.<n>`: the prefix lets a host find every tree it started (tests, operators). */
export function newTreeId(): string {
  return `${treeIdPrefix()}${processPart}.${++sequence}`;
}

/**
 * The prefix of this Node process's tree ids that no other process (even one reusing the pid
 * later) shares: what the crash-recovery ledger records (K3).
 *
 * @example
 * ```ts
 * newTreeId().startsWith(processTreePrefix()); // true
 * ```
 */
export function processTreePrefix(): string {
  return `${treeIdPrefix()}${processPart}.`;
}

/** The prefix shared by every tree id this Node process hands out. */
export function treeIdPrefix(pid: number = process.pid): string {
  return `${pid}.`;
}
