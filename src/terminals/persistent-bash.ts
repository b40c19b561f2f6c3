import { resolve } from 'node:path';
import { assertArgument, TetherError } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { passDecision } from '../policy/policy-passed.js';
import type { PolicyStep } from '../policy/policy-types.js';
import type { TerminalCommandResult, TerminalService } from './terminal-types.js';

/** One command through an owner's hidden persistent shell. `fresh`: a new shell was opened for it. */
export interface PersistentBashResult extends TerminalCommandResult {
  readonly fresh: boolean;
}

/** Options of one persistent-bash call. */
export interface PersistentBashRunOptions {
  readonly timeoutMs?: number;
  /** Aborting interrupts the command and rejects with `ABORTED` (the shell stays usable). */
  readonly signal?: AbortSignal;
  /**
   * Change the session's directory to this one first, as typing `cd` would: the session stays
   * there for the calls after. Relative to the runtime's cwd. A directory the shell cannot
   * enter fails with CWD_NOT_FOUND and the command does not run.
   */
  readonly cwd?: string;
}

/**
 * A one-shot-like call over one PTY reused per owner (SPEC section 8, persistent bash): state
 * (cwd, variables, functions) carries from call to call, the terminal itself stays hidden. If
 * that terminal ended, the next call opens a new one and says `fresh: true`.
 *
 * @example
 * ```ts
 * await rt.persistentBash.run(owner, 'export NODE_ENV=test', { cwd: 'packages/app' });
 * const r = await rt.persistentBash.run(owner, 'npm test', { timeoutMs: 300_000 });
 * ```
 */
export interface PersistentBash {
  run(
    owner: AgentOwnerToken,
    command: string,
    opts?: PersistentBashRunOptions,
  ): Promise<PersistentBashResult>;
}

/**
 * Creates the persistent-bash layer over a terminal service; it keeps only which terminal
 * serves which owner (teardown is the terminal service's: draining an owner closes it).
 * `cwd` is the runtime's cwd, against which a call's relative `cwd` is resolved; `decide` (A1)
 * judges each command before anything starts, the hidden shell included.
 *
 * @example
 * ```ts
 * const bash = createPersistentBash(terminals, { cwd: '/repo', decide: policy.decide });
 * ```
 */
export function createPersistentBash(
  terminals: TerminalService,
  defaults: { readonly cwd: string; readonly decide?: PolicyStep } = { cwd: process.cwd() },
): PersistentBash {
  // Tokens have reference identity; a WeakMap lets a retired owner's entry go with it.
  const shells = new WeakMap<AgentOwnerToken, Promise<string>>();
  // A1/A6: `run` decided the command before anything starts; the open of the hidden shell and
  // the execute (and the `cd` of `cwd`) carry that one decision instead of being asked again.
  // Without a decide step of its own the terminal service decides them like any terminal's.
  const carry = <T extends object>(options: T): T =>
    defaults.decide === undefined ? options : passDecision(options);
  const open = (owner: AgentOwnerToken): Promise<string> => {
    const id = terminals.open(owner, carry({ hidden: true })).then((info) => info.id);
    shells.set(owner, id);
    id.catch(() => shells.delete(owner));
    return id;
  };
  const execute = async (
    owner: AgentOwnerToken,
    id: string,
    command: string,
    opts: PersistentBashRunOptions,
  ) => {
    const { cwd, ...options } = opts;
    const rest = carry(options);
    if (cwd !== undefined) {
      const dir = resolve(defaults.cwd, cwd);
      const cd = await terminals.execute(owner, id, `cd -- ${shellQuote(dir)}`, rest);
      if (cd.exitCode !== 0 && !cd.shellReset) {
        throw new TetherError(
          'CWD_NOT_FOUND',
          `cwd '${dir}' could not be entered (${cd.output.trim() || `cd exited ${cd.exitCode}`}); ` +
            'pass a directory that exists',
        );
      }
    }
    return terminals.execute(owner, id, command, rest);
  };
  return {
    async run(owner, command, opts = {}) {
      const { decide } = defaults;
      if (decide !== undefined) {
        assertArgument(typeof command === 'string', 'command must be a string');
        assertArgument(
          opts.cwd === undefined || (typeof opts.cwd === 'string' && opts.cwd !== ''),
          'cwd must be a non-empty string path',
        );
        await decide({
          action: 'persistent-bash',
          owner,
          command,
          cwd: resolve(defaults.cwd, opts.cwd ?? '.'),
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
      }
      const known = shells.get(owner);
      const id = await (known ?? open(owner));
      try {
        return { ...(await execute(owner, id, command, opts)), fresh: known === undefined };
      } catch (err) {
        // The hidden terminal ended (closed, drained, its session exited): start over once.
        if (!(err instanceof TetherError) || !['TERMINAL_CLOSED', 'TERMINAL_NOT_FOUND'].includes(err.code))
          throw err;
        const fresh = await open(owner);
        return { ...(await execute(owner, fresh, command, opts)), fresh: true };
      }
    },
  };
}

// One word for bash, whatever `text` holds: single quotes, each ' written as '\''.
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
