import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readIdentity } from '../identity.js';
import { processTreePrefix } from '../marker.js';
import { type ContainmentRequest, createContainment } from './containment.js';
import type { Containment } from './containment-types.js';
import { type CpuGroup, enterCpuGroup, openCpuGroup } from './cpu-group.js';
import { processScope, removeRuntimeRecord, spawnerFifoDir, writeRuntimeRecord } from './ledger.js';
import { openPodPlaces, type PodPlaces } from './pod-places.js';
import { type RecoveredRuntime, reapDeadRuntimes } from './reaper.js';
import { openStateDir, unusable } from './state-dir.js';

/** Everything a runtime's containment consists of, made in `createRuntime` (K1, K3). */
export interface RuntimeBoundary {
  readonly runtimeId: string;
  /** Every tree's boundary; its trees also start in `cpuGroup` when there is one. */
  readonly containment: Containment;
  /** The runtime's own spill directory (below the spill root), or `null` when it never spills. */
  readonly spillDir: string | null;
  /** Where the runtime's spawner keeps its FIFOs (below the state dir: recovery removes it). */
  readonly spawnerDir: string;
  /** What the reap at start found of dead runtimes of the same state directory. */
  readonly recovered: readonly RecoveredRuntime[];
  /** The one CPU weight of all its trees (issue 30.6), or null where there is none. */
  readonly cpuGroup: CpuGroup | null;
  /** X6: where its pods are (recorded before the first pod of each place, for recovery). */
  readonly podPlaces: PodPlaces;
  /** After every tree is dead: removes the cgroups and the ledger record. */
  close(): Promise<void>;
}

export interface RuntimeBoundaryOptions {
  readonly containment: ContainmentRequest;
  readonly stateDir: string;
  /** The spill root, or `false`. */
  readonly spillRoot: string | false;
  readonly graceMs: number;
  /** How much nicer than this process its trees run together (`createRuntime({ nice })`). */
  readonly nice: number;
}

let runtimes = 0;

/**
 * The default state directory (K3): one per user, in the temp dir — the ledger only has to
 * outlive a crashed process, never a reboot (a reboot ends every tree anyway).
 *
 * @example
 * ```ts
 * defaultStateDir(); // '/tmp/tether-state-0'
 * ```
 */
export function defaultStateDir(): string {
  return join(tmpdir(), `tether-state-${process.getuid?.() ?? 'user'}`);
}

/**
 * Reaps the dead runtimes of the state directory, opens this runtime's containment, and
 * records it (synced) before anything is spawned (K3).
 *
 * @example
 * ```ts
 * const boundary = await openRuntimeBoundary({ containment: 'auto', stateDir, spillRoot, graceMs: 2000, nice: 10 });
 * // ... the runtime runs; every tree was killed ...
 * await boundary.close();
 * ```
 */
export async function openRuntimeBoundary(opts: RuntimeBoundaryOptions): Promise<RuntimeBoundary> {
  const self = readIdentity(process.pid);
  const runtimeId = `${process.pid}-${self?.startTime ?? 'x'}-${++runtimes}`;
  // Made and checked first: a state directory that cannot be written or trusted fails here,
  // before this runtime has a cgroup to leave behind.
  openStateDir(opts.stateDir);
  const recovered = await reapDeadRuntimes(opts.stateDir, { graceMs: opts.graceMs });
  const containment = createContainment({
    request: opts.containment,
    runtimeId,
    stateDir: opts.stateDir,
  });
  const spillDir = opts.spillRoot === false ? null : join(opts.spillRoot, `tether-${runtimeId}`);
  let record: string;
  try {
    record = writeRuntimeRecord(opts.stateDir, {
      version: 1,
      runtimeId,
      pid: process.pid,
      startTime: self?.startTime ?? null,
      ...processScope(),
      containment: containment.mode,
      cgroup: containment.cgroup,
      markerPrefix: processTreePrefix(),
      spillDir,
      spillRoot: opts.spillRoot === false ? null : opts.spillRoot,
      startedAt: Date.now(),
    });
  } catch (err) {
    await containment.dispose();
    throw unusable(opts.stateDir, err);
  }
  const cpuGroup = openCpuGroup(runtimeId, opts.nice);
  const podPlaces = openPodPlaces(opts.stateDir, runtimeId);
  return {
    runtimeId,
    containment: enterCpuGroup(containment, cpuGroup),
    spillDir,
    spawnerDir: spawnerFifoDir(opts.stateDir, runtimeId),
    recovered,
    cpuGroup,
    podPlaces,
    async close() {
      await containment.dispose();
      cpuGroup?.close();
      podPlaces.close();
      removeRuntimeRecord(record);
    },
  };
}
