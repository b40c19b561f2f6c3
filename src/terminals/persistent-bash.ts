import { TetherError } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { PolicyStep } from '../policy/policy-types.js';
import type { TerminalCommandResult, TerminalService } from './terminal-types.js';

/** One command through an owner's hidden persistent shell. `fresh`: a new shell was opened for it. */
export interface PersistentBashResult extends TerminalCommandResult {
  readonly fresh: boolean;
}

/**
 * A one-shot-like call over one PTY reused per owner (SPEC section 8, persistent bash): state
 * (cwd, variables, functions) carries from call to call, the terminal itself stays hidden. If
 * that terminal ended, the next call opens a new one and says `fresh: true`.
 *
 * @example
 * ```ts
 * await rt.persistentBash.run(owner, 'cd /repo && export NODE_ENV=test');
 * const r = await rt.persistentBash.run(owner, 'npm test', { timeoutMs: 300_000 });
 * ```
 */
export interface PersistentBash {
  /** `signal`: aborting interrupts the command and rejects with `ABORTED` (the shell stays usable). */
  run(
    owner: AgentOwnerToken,
    command: string,
    opts?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<PersistentBashResult>;
}

/**
 * Creates the persistent-bash layer over a terminal service; it keeps only which terminal
 * serves which owner (teardown is the terminal service's: draining an owner closes it).
 * `decide` (A1) judges each command before anything starts, the hidden shell included.
 *
 * @example
 * ```ts
 * const bash = createPersistentBash(terminals, policy.decide);
 * ```
 */
export function createPersistentBash(
  terminals: TerminalService,
  decide?: PolicyStep,
  cwd?: string,
): PersistentBash {
  // Tokens have reference identity; a WeakMap lets a retired owner's entry go with it.
  const shells = new WeakMap<AgentOwnerToken, Promise<string>>();
  const open = (owner: AgentOwnerToken): Promise<string> => {
    const id = terminals.open(owner, { hidden: true }).then((info) => info.id);
    shells.set(owner, id);
    id.catch(() => shells.delete(owner));
    return id;
  };
  return {
    async run(owner, command, opts = {}) {
      if (decide !== undefined) {
        if (typeof command !== 'string')
          throw new TetherError('INVALID_ARGUMENT', 'command must be a string');
        await decide({
          action: 'persistent-bash',
          owner,
          command,
          cwd: cwd ?? process.cwd(),
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
      }
      const known = shells.get(owner);
      const id = await (known ?? open(owner));
      try {
        return { ...(await terminals.execute(owner, id, command, opts)), fresh: known === undefined };
      } catch (err) {
        // The hidden terminal ended (closed, drained, its session exited): start over once.
        if (!(err instanceof TetherError) || !['TERMINAL_CLOSED', 'TERMINAL_NOT_FOUND'].includes(err.code))
          throw err;
        const fresh = await open(owner);
        return { ...(await terminals.execute(owner, fresh, command, opts)), fresh: true };
      }
    },
  };
}
