import { readProcText } from '../proc.js';
import type { ProcessIdentity } from '../types.js';
import { childPids, listTids } from './foreground-group.js';

/**
 * How many bytes the terminal's processes have read so far (T5): the `rchar` of the session
 * root and of every live descendant (`/proc/<pid>/io`, readable for our own descendants),
 * summed. Taken before input is written and again with a proof, it tells whether the input
 * was read at all: a proof taken while part of the input still sits in the terminal's queue
 * (a loaded machine delivers one write in pieces) shows the reader back in its wait having
 * read less than was written. It counts every read, not only the terminal's, so it is a
 * necessary condition, never a proof by itself. `null` where /proc does not say.
 *
 * @example
 * ```ts
 * const before = sessionReadBytes(shell.identity);
 * await pty.write('read x\r');
 * // with a later proof: sessionReadBytes(shell.identity)! - before! >= 7
 * ```
 */
export function sessionReadBytes(root: ProcessIdentity): number | null {
  const own = readChars(root.pid);
  if (own === null) return null;
  let total = own;
  const queue = [root.pid];
  const seen = new Set(queue);
  for (let i = 0; i < queue.length; i++) {
    const pid = queue[i]!;
    for (const child of childPids(pid, listTids(pid) ?? [])) {
      if (seen.has(child)) continue;
      seen.add(child);
      queue.push(child);
      total += readChars(child) ?? 0;
    }
  }
  return total;
}

// `rchar` of process `pid` (all its threads), or null when unreadable or gone.
function readChars(pid: number): number | null {
  const text = readProcText(`/proc/${pid}/io`);
  const match = text === null ? null : /^rchar: (\d+)$/m.exec(text);
  return match ? Number(match[1]) : null;
}
