import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeadState, signalIdentity } from '../identity.js';
import type { ProcStat } from '../proc.js';
import { type ProcSnapshot, scanProcSnapshot, withDescendants } from '../proc-snapshot.js';

/** What the sweep of a dead runtime's processes looks for. */
export interface DeadRuntimeTarget {
  /** Every `TETHER_TREE` value of the runtime starts with it. */
  readonly markerPrefix: string;
  /** The dead runtime's start time: nothing of its trees started earlier. */
  readonly startTime: number | null;
  /**
   * Report orphaned session leaders without a marker as not proven dead (marker mode, where
   * nothing else can find a `setsid env -i` escapee); off where a cgroup is the proof.
   */
  readonly suspects: boolean;
}

/** Re-read period of the sweep: without a cgroup there is nothing to watch. */
const SWEEP_POLL_MS = 50;

/**
 * Kills what a dead runtime's trees left outside any cgroup (K3), as the live kill does (S4):
 * every process carrying its marker prefix, every process in a session or group of one of
 * those (without another tree's marker), every descendant of one; TERM (+CONT) until gone or
 * `graceMs`, then KILL until `deadlineMs`. `left` is what is still alive, plus — with
 * `suspects` — every orphaned session leader of this user without a marker started after the
 * runtime: never signalled (it may be anyone's), never called dead.
 *
 * @example
 * ```ts
 * const { killed, left } = await sweepDeadRuntime({ markerPrefix, startTime, suspects: true }, 2000, 2000);
 * ```
 */
export async function sweepDeadRuntime(
  target: DeadRuntimeTarget,
  graceMs: number,
  deadlineMs: number,
): Promise<{ readonly killed: number; readonly left: number[] }> {
  const sent = new Set<string>();
  let snap = scanProcSnapshot();
  for (const [signal, ms] of [
    ['SIGTERM', graceMs],
    ['SIGKILL', deadlineMs],
  ] as const) {
    const until = performance.now() + ms;
    for (;;) {
      const members = membersOf(snap, target);
      if (members.length === 0) break;
      for (const m of members) {
        const id = { pid: m.pid, startTime: m.startTime };
        if (signalIdentity(id, signal)) sent.add(`${m.pid}:${m.startTime}`);
        if (signal === 'SIGTERM' && (m.state === 'T' || m.state === 't')) signalIdentity(id, 'SIGCONT');
      }
      if (performance.now() >= until) break;
      await sleep(SWEEP_POLL_MS);
      snap = scanProcSnapshot();
    }
    snap = scanProcSnapshot();
    if (membersOf(snap, target).length === 0) break;
  }
  const left = membersOf(snap, target).map((m) => m.pid);
  if (target.suspects) left.push(...suspectsOf(snap, target).filter((pid) => !left.includes(pid)));
  return { killed: sent.size, left };
}

// S4's membership for a runtime whose roots are gone: the marker carriers stand in for them.
function membersOf(snap: ProcSnapshot, target: DeadRuntimeTarget): ProcStat[] {
  const since = target.startTime ?? 0;
  const live = snap.stats.filter((s) => !isDeadState(s.state) && !snap.self.has(s.pid));
  const ours = (s: ProcStat) => snap.marker(s.pid)?.startsWith(target.markerPrefix) === true;
  const carriers = live.filter(ours);
  // Sessions and groups of this process or its ancestors are never a tree's.
  const mine = new Set<number>();
  for (const pid of snap.self) {
    const s = snap.byPid.get(pid);
    if (s !== undefined) mine.add(s.session).add(s.pgrp);
  }
  const groups = new Set<number>();
  for (const c of carriers) for (const n of [c.session, c.pgrp]) if (n > 1 && !mine.has(n)) groups.add(n);
  const members = new Set(carriers.map((c) => c.pid));
  for (const s of live) {
    if (members.has(s.pid) || s.startTime < since) continue;
    const tag = snap.marker(s.pid);
    // Another tree's marker: a process of someone else that shares nothing with ours.
    if (typeof tag === 'string' && !tag.startsWith(target.markerPrefix)) continue;
    if (groups.has(s.session) || groups.has(s.pgrp)) members.add(s.pid);
  }
  return withDescendants(members, live);
}

// What only looks like an escapee (S4's suspects): no marker, a session of its own, orphaned
// (adopted by init or a subreaper among our ancestors), this user's, started after the runtime.
function suspectsOf(snap: ProcSnapshot, target: DeadRuntimeTarget): number[] {
  const since = target.startTime ?? 0;
  const uid = process.getuid?.();
  return snap.stats
    .filter(
      (s) =>
        s.startTime >= since &&
        !isDeadState(s.state) &&
        !snap.self.has(s.pid) &&
        s.session === s.pid &&
        (s.ppid === 1 || (snap.self.has(s.ppid) && s.ppid !== process.pid)) &&
        !snap.marker(s.pid) &&
        ownerOf(s.pid) === uid,
    )
    .map((s) => s.pid);
}

function ownerOf(pid: number): number | null {
  try {
    return statSync(`/proc/${pid}`).uid;
  } catch {
    return null;
  }
}
