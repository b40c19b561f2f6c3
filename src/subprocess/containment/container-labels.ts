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
  return Object.entries(originLabels(origin)).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
}

/**
 * The same facts as Kubernetes labels of a pod of `origin` (X6): a label value is at most 63
 * characters of `[A-Za-z0-9_.-]`, so the pid namespace `pid:[4026531836]` is its number alone.
 *
 * @example
 * ```ts
 * podLabels(origin); // { 'tether.runtime': '812-9031-1', 'tether.pid': '812', 'tether.pidns': '4026531836', … }
 * ```
 */
export function podLabels(origin: ContainerOrigin): Record<string, string> {
  const labels = originLabels(origin);
  const ns = /^pid:\[(\d+)\]$/.exec(labels[KEYS.pidNamespace] ?? '')?.[1];
  if (ns !== undefined) labels[KEYS.pidNamespace] = ns;
  else delete labels[KEYS.pidNamespace];
  return labels;
}

function originLabels(origin: ContainerOrigin): Record<string, string> {
  const pairs: [string, string | number | null][] = [
    [RUNTIME_LABEL, origin.runtimeId],
    [KEYS.pid, origin.pid],
    [KEYS.startTime, origin.startTime],
    [KEYS.owner, origin.owner],
    [KEYS.pidNamespace, origin.pidNamespace],
    [KEYS.bootId, origin.bootId],
  ];
  return Object.fromEntries(pairs.flatMap(([key, value]) => (value === null ? [] : [[key, String(value)]])));
}

/**
 * The origin a container's or pod's labels name, or `null` when they do not name a runtime's process
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
    // A pod's label is the namespace's number alone (podLabels).
    pidNamespace: pidNamespaceOf(labels[KEYS.pidNamespace]),
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

function pidNamespaceOf(label: string | undefined): string | null {
  if (label === undefined) return null;
  return /^\d+$/.test(label) ? `pid:[${label}]` : label;
}
