import { setTimeout as sleep } from 'node:timers/promises';
import { readProcStat } from '../proc.js';
import type { TerminalHandle } from '../types.js';

/** What a foreground delivery needs of a terminal: its leader and its group signal. */
type ForegroundTarget = Pick<TerminalHandle, 'identity' | 'signal'>;

/** How often, and how long, the foreground is re-checked after an interrupt. */
const RECHECK_MS = 50;
const RECHECKS = 3;
/** How often a delivery that found no live foreground group is tried again. */
const RETRY_MS = 5;
const RETRIES = 5;

/**
 * Delivers `signal` to the terminal's foreground process group (T8: the session re-reads
 * identities before delivery). An interrupt can race a foreground program that is exiting on
 * its own — a loop's `sleep` that just finished, with the next one about to start in a new
 * group — and then changes nothing. So for SIGINT, SIGQUIT and SIGTSTP the foreground group is
 * read again for a moment, and if another program (not the shell itself) took the foreground,
 * it gets the signal once too: "interrupt what runs in the foreground now".
 *
 * @example
 * ```ts
 * if (!(await signalForeground(pty, 'SIGINT'))) throw new Error('nothing to interrupt');
 * ```
 */
export async function signalForeground(pty: ForegroundTarget, signal: NodeJS.Signals): Promise<boolean> {
  let first = foregroundGroup(pty);
  // The group read may name a program that exited a moment later: read again while the shell lives.
  for (let attempt = 0; !pty.signal(signal, 'foreground'); attempt++) {
    if (attempt === RETRIES || foregroundGroup(pty) === null) return false;
    await sleep(RETRY_MS);
    first = foregroundGroup(pty);
  }
  if (signal !== 'SIGINT' && signal !== 'SIGQUIT' && signal !== 'SIGTSTP') return true;
  for (let i = 0; i < RECHECKS; i++) {
    await sleep(RECHECK_MS);
    const now = foregroundGroup(pty);
    if (now === null || now === pty.identity.pid) return true; // the shell has the terminal back
    if (now !== first) {
      pty.signal(signal, 'foreground');
      return true;
    }
  }
  return true;
}

// Field 8 of the shell's stat: the terminal's foreground process group.
function foregroundGroup(pty: ForegroundTarget): number | null {
  return readProcStat(pty.identity.pid)?.tpgid ?? null;
}
