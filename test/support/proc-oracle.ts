import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readProcStat } from '../../src/subprocess/proc.js';

/** A process a test saw alive: its pid and its start time (a pid alone may be reused). */
export interface SeenProcess {
  readonly pid: number;
  readonly startTime: number;
}

/**
 * The pids a script announced as `tag=<pid>` lines (e.g. `echo child=$!`), identified by
 * their start time while they are still alive; throws for one already gone (the test could
 * then not prove anything about it).
 *
 * @example
 * ```ts
 * const seen = announced('child=123\nescaped=456\n', ['child', 'escaped']);
 * ```
 */
export function announced(text: string, tags: readonly string[]): SeenProcess[] {
  return tags.map((tag) => {
    const match = new RegExp(`(?:^|\\n)${tag}=(\\d+)\\n`).exec(text);
    if (match === null) throw new Error(`the script did not announce ${tag}=<pid>: ${JSON.stringify(text)}`);
    const pid = Number(match[1]);
    const stat = readProcStat(pid);
    if (stat === null || stat.state === 'Z')
      throw new Error(`${tag}=${pid} was already gone when first seen`);
    return { pid, startTime: stat.startTime };
  });
}

/**
 * Those of `seen` still alive, read from /proc alone (an oracle independent of the runtime's
 * own tree bookkeeping): same pid, same start time, not a zombie.
 *
 * @example
 * ```ts
 * expect(alive(seen)).toEqual([]);
 * ```
 */
export function alive(seen: readonly SeenProcess[]): number[] {
  return seen
    .filter(({ pid, startTime }) => {
      const stat = readProcStat(pid);
      return stat !== null && stat.startTime === startTime && stat.state !== 'Z' && stat.state !== 'X';
    })
    .map((p) => p.pid);
}

/** The session id of a live pid (to prove a child escaped its parent's session with setsid). */
export function sessionOf(pid: number): number | null {
  return readProcStat(pid)?.session ?? null;
}

/** How many threads this process has, from /proc/self/status (not the runtime's counters). */
export function threadCount(): number {
  const match = /^Threads:\s+(\d+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  if (match === null) throw new Error('no Threads: line in /proc/self/status');
  return Number(match[1]);
}

/**
 * Those of `pids` still alive running exactly `argv` (for processes the test could not see
 * while alive, e.g. in another process's tree: a unique argv stands in for the start time).
 *
 * @example
 * ```ts
 * expect(aliveRunning([123], ['sleep', '30417'])).toEqual([]);
 * ```
 */
export function aliveRunning(pids: readonly number[], argv: readonly string[]): number[] {
  const want = `${argv.join('\0')}\0`;
  return pids.filter((pid) => {
    const stat = readProcStat(pid);
    if (stat === null || stat.state === 'Z' || stat.state === 'X') return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === want;
    } catch {
      return false;
    }
  });
}

/** The parent pid of `pid` (field 4 of /proc/<pid>/stat), or null when it is gone. */
export function ppidOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/**
 * Whether `pid` is a spawner process (P1) this process started: a direct child running
 * build/tether-spawner, what a live runtime keeps beside its worker threads.
 *
 * @example
 * ```ts
 * const leaked = pidsInMyCgroup.filter((pid) => !isOwnSpawner(pid));
 * ```
 */
export function isOwnSpawner(pid: number): boolean {
  try {
    return ppidOf(pid) === process.pid && readlinkSync(`/proc/${pid}/exe`).endsWith('/build/tether-spawner');
  } catch {
    return false;
  }
}

/** The spawner processes this process started (see {@link isOwnSpawner}). */
export function ownSpawners(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter(isOwnSpawner);
}

/**
 * Host pids (this machine's /proc, which also sees sandboxed and namespaced processes) whose
 * command line starts with `needle`, zombies left out.
 *
 * @example
 * ```ts
 * expect(hostPidsRunning('sleep 31417')).toHaveLength(1);
 * ```
 */
export function hostPidsRunning(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const state = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.startsWith(needle) && state !== 'Z') pids.push(Number(name));
    } catch {}
  }
  return pids;
}

/**
 * Resolves once the terminal whose shell is `shellPid` has another process group than the
 * shell's in the foreground (the command the test typed is running), read from /proc: a
 * signal sent before that would reach the shell at its prompt instead. Polls every 10 ms;
 * throws after 60 s.
 *
 * @example
 * ```ts
 * await rt.terminals.send(owner, id, 'sleep 1000\n', { settleMs: 100 });
 * await foregroundTaken(info.pid);
 * await rt.terminals.signal(owner, id, 'SIGINT');
 * ```
 */
export async function foregroundTaken(shellPid: number): Promise<void> {
  for (let i = 0; ; i++) {
    const stat = readProcStat(shellPid);
    if (stat === null) throw new Error(`shell ${shellPid} is gone`);
    if (stat.tpgid > 0 && stat.tpgid !== stat.pgrp) return;
    if (i > 6_000) throw new Error(`nothing but the shell ${shellPid} ever took the terminal's foreground`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
