import { isDeadState, isSameLiveProcess, signalIdentity } from '../identity.js';
import { hasProcfs, type ProcStat, readProcStat } from '../proc.js';
import { currentProcSnapshotSeq, procSnapshotAfter, scanProcSnapshot } from '../proc-snapshot.js';
import type { ProcessIdentity, TerminalSignalTarget } from '../types.js';

/** Which processes of a terminal a signal is for. */
export type PtySignalTarget = TerminalSignalTarget;

/**
 * Sends `signal` to the process group `leader` leads, if `leader` is still the same live
 * process (identity re-read from /proc just before, S4/T8). A PTY's leader heads its own
 * session and group, so its group number is ours for as long as it lives.
 *
 * @example
 * ```ts
 * signalGroupOf(session.identity, 'SIGKILL'); // false: already gone, nothing sent
 * ```
 */
export function signalGroupOf(leader: ProcessIdentity, signal: NodeJS.Signals): boolean {
  if (leader.pid <= 1 || leader.pid === process.pid || !isSameLiveProcess(leader)) return false;
  return killGroup(leader.pid, signal);
}

/**
 * Delivers `signal` to a terminal's processes (T8), re-reading identities first:
 * `foreground` is the terminal's foreground process group (field 8, `tpgid`, of the leader's
 * /proc stat), delivered only when that group lives in the leader's session; `session` is
 * every live process of the leader's session, each identity-checked. Returns `false`, and
 * sends nothing, once the leader is gone: a session whose exit was observed is never signalled.
 * Without /proc (macOS) both fall back to the leader's group — a weaker guarantee.
 *
 * @example
 * ```ts
 * signalTerminal(session.identity, 'SIGINT', 'foreground'); // Ctrl-C for `sleep 1000` in bash
 * ```
 */
export function signalTerminal(
  leader: ProcessIdentity,
  signal: NodeJS.Signals,
  target: PtySignalTarget,
): boolean {
  if (!hasProcfs()) return signalGroupOf(leader, signal);
  const stat = readProcStat(leader.pid);
  if (stat === null || isDeadState(stat.state) || stat.startTime !== leader.startTime) return false;
  if (target === 'session') return signalSession(leader, signal, scanProcSnapshot().stats);
  const foreground = stat.tpgid;
  if (foreground <= 0 || !groupInSession(foreground, leader)) return false;
  return killGroup(foreground, signal);
}

// A group number is ours while a live member of it sits in the leader's session.
function groupInSession(pgid: number, leader: ProcessIdentity): boolean {
  const inSession = (s: ProcStat | undefined | null): boolean =>
    s != null &&
    !isDeadState(s.state) &&
    s.pgrp === pgid &&
    s.session === leader.pid &&
    s.startTime >= (leader.startTime ?? 0);
  if (inSession(readProcStat(pgid))) return true;
  // The group's leader may have exited while members remain (a pipeline's first command).
  return scanProcSnapshot().stats.some(inSession);
}

/**
 * `signalTerminal(leader, signal, 'session')` for a caller that can wait one turn: the /proc
 * scan that finds the session's members starts after this call, as the synchronous one does,
 * but every session signalled in the same turn shares it (proc-snapshot.ts). Closing 1,000
 * terminals at once is then one scan of the machine's processes, not 1,000 (P8).
 *
 * @example
 * ```ts
 * await Promise.all(sessions.map((s) => signalSessionShared(s.identity, 'SIGHUP')));
 * ```
 */
export async function signalSessionShared(leader: ProcessIdentity, signal: NodeJS.Signals): Promise<boolean> {
  if (!hasProcfs()) return signalGroupOf(leader, signal);
  const snap = await procSnapshotAfter(currentProcSnapshotSeq());
  const stat = snap.byPid.get(leader.pid);
  if (stat === undefined || isDeadState(stat.state) || stat.startTime !== leader.startTime) return false;
  return signalSession(leader, signal, snap.stats);
}

// Every live member of the leader's session among `stats`, one identity-checked signal each.
function signalSession(leader: ProcessIdentity, signal: NodeJS.Signals, stats: readonly ProcStat[]): boolean {
  let sent = false;
  for (const s of stats) {
    if (s.session !== leader.pid || isDeadState(s.state) || s.startTime < (leader.startTime ?? 0)) continue;
    if (signalIdentity({ pid: s.pid, startTime: s.startTime }, signal)) sent = true;
  }
  return sent;
}

// kill(-pgid); ESRCH (the group just emptied) and EPERM mean nothing was delivered.
function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}
