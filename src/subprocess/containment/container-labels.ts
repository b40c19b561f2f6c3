import { readIdentity } from '../identity.js';
import type { ProcessIdentity } from '../types.js';
import { processScope } from './ledger.js';

/** Who started a placed container (X6): the runtime's process, named for life, and the owner. */
export interface ContainerOrigin {
  readonly runtimeId: string;
  /** The runtime's process: pid + start time, as its ledger record names it (K3). */
  readonly pid: number;
  readonly startTime: number | null;
  /** Where the pid means something (`/proc/self/ns/pid`) and the boot it was started in. */
  readonly pidNamespace: string | null;
  readonly bootId: string | null;
  /** The owner's registry key (`o1`): a label, never a capability (O1). */
  readonly owner: string;
}

/** The label every container of a Tether runtime carries; the sweep finds them by it alone. */
export const RUNTIME_LABEL = 'tether.runtime';

const KEYS = {
  pid: 'tether.pid',
  startTime: 'tether.start',
  owner: 'tether.owner',
  pidNamespace: 'tether.pidns',
  bootId: 'tether.boot',
} as const;

/**
 * The `--label` arguments of `podman run` / `docker run` for a container of `origin`.
 *
 * @example
 * ```ts
 * labelArgs({ runtimeId: '812-9031-1', pid: 812, startTime: 9031, pidNamespace, bootId, owner: 'o1' });
 * // ['--label', 'tether.runtime=812-9031-1', '--label', 'tether.pid=812', …]
 * ```
 */
export function labelArgs(origin: ContainerOrigin): string[] {
  const pairs: [string, string | number | null][] = [
    [RUNTIME_LABEL, origin.runtimeId],
    [KEYS.pid, origin.pid],
    [KEYS.startTime, origin.startTime],
    [KEYS.owner, origin.owner],
    [KEYS.pidNamespace, origin.pidNamespace],
    [KEYS.bootId, origin.bootId],
  ];
  return pairs.flatMap(([key, value]) => (value === null ? [] : ['--label', `${key}=${value}`]));
}

/**
 * The origin a container's labels name, or `null` when they do not name a runtime's process
 * (no runtime id or no pid: such a container is never judged, never removed).
 *
 * @example
 * ```ts
 * const origin = originOf({ 'tether.runtime': '812-9031-1', 'tether.pid': '812', 'tether.start': '9031' });
 * ```
 */
export function originOf(labels: Readonly<Record<string, string>>): ContainerOrigin | null {
  const runtimeId = labels[RUNTIME_LABEL];
  const pid = Number(labels[KEYS.pid]);
  if (!runtimeId || !Number.isSafeInteger(pid) || pid <= 0) return null;
  const start = labels[KEYS.startTime];
  const startTime = start === undefined ? null : Number(start);
  if (startTime !== null && !Number.isSafeInteger(startTime)) return null;
  return {
    runtimeId,
    pid,
    startTime,
    pidNamespace: labels[KEYS.pidNamespace] ?? null,
    bootId: labels[KEYS.bootId] ?? null,
    owner: labels[KEYS.owner] ?? '',
  };
}

/**
 * The runtime process an origin names.
 *
 * @example
 * ```ts
 * isSameLiveProcess(processOf(origin));
 * ```
 */
export function processOf(origin: ContainerOrigin): ProcessIdentity {
  return { pid: origin.pid, startTime: origin.startTime };
}

/**
 * This process as the origin of runtime `runtimeId`'s containers: the pid, start time, pid
 * namespace and boot its ledger record names (K3), so recovery judges both alike.
 *
 * @example
 * ```ts
 * const origin = { ...runtimeOrigin(boundary.runtimeId), owner: 'o1' };
 * ```
 */
export function runtimeOrigin(runtimeId: string): Omit<ContainerOrigin, 'owner'> {
  return {
    runtimeId,
    pid: process.pid,
    startTime: readIdentity(process.pid)?.startTime ?? null,
    ...processScope(),
  };
}
