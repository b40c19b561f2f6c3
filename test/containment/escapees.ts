import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readIdentity } from '../../src/subprocess/identity.js';
import type { ProcessIdentity } from '../../src/subprocess/types.js';
import { waitFor } from '../support/spawn-tree.js';

/**
 * One shell command that leaves every kind of escapee K2 names, each writing its pid to `$P`:
 * `setsid env -i` (new session, empty env, orphaned), a double fork with closed fds, nohup, a
 * stopped child, and the leader itself ignoring SIGTERM. Prints `ready` once all five wrote.
 */
export const ESCAPEES = [
  "trap '' TERM",
  'echo "leader $$" >> "$P"',
  `(setsid env -i sh -c 'echo "envless $$" >> "$0"; exec sleep 300' "$P" &)`,
  `( (sh -c 'echo "closed-fds $$" >> "$P"; exec sleep 300' <&- >&- 2>&- &) & )`,
  `nohup sh -c 'echo "nohup $$" >> "$P"; exec sleep 300' >/dev/null 2>&1 &`,
  `sh -c 'echo "stopped $$" >> "$P"; kill -STOP $$; exec sleep 300' &`,
  'while [ "$(wc -l < "$P")" -lt 5 ]; do sleep 0.05; done',
  'echo ready',
  'sleep 300',
].join('\n');

/** A fresh pid file for {@link ESCAPEES}; `cleanup()` removes it. */
export function pidFile(): { readonly path: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'tether-escapees-'));
  return { path: join(dir, 'pids'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The five processes of {@link ESCAPEES}, by kind. */
export type Escapees = Readonly<
  Record<'leader' | 'envless' | 'closed-fds' | 'nohup' | 'stopped', ProcessIdentity>
>;

/** Waits until the five escapees wrote their pids; returns their identities by kind. */
export async function escapeeIdentities(path: string): Promise<Escapees> {
  const lines = await waitFor(() => {
    try {
      const found = readFileSync(path, 'utf8').split('\n').filter(Boolean);
      return found.length >= 5 ? found : null;
    } catch {
      return null;
    }
  }, 'five escapees to write their pids');
  const entries = lines.map((line) => {
    const [kind, pid] = line.split(' ');
    return [kind, readIdentity(Number(pid)) ?? { pid: Number(pid), startTime: -1 }] as const;
  });
  return Object.fromEntries(entries) as unknown as Escapees;
}

/** The pids of `ids` that still name a live (non-zombie) process. */
export function alive(ids: readonly ProcessIdentity[] | Escapees): number[] {
  return (Array.isArray(ids) ? ids : Object.values(ids))
    .filter((id) => {
      try {
        const stat = readFileSync(`/proc/${id.pid}/stat`, 'latin1');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return fields[0] !== 'Z' && Number(fields[19]) === id.startTime;
      } catch {
        return false;
      }
    })
    .map((id) => id.pid);
}
