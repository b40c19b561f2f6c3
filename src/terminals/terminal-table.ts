import type { InspectionEvent } from 'xstate';
import { CompletionHub } from '../completions/completion-hub.js';
import { assertArgument, TetherError } from '../errors.js';
import type { OwnerRegistry } from '../owners/owner-registry.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { PolicyStep } from '../policy/policy-types.js';
import type { SubprocessProvider } from '../subprocess/types.js';
import type { TerminalRecord } from './terminal-record.js';
import { TimerCount } from './terminal-timers.js';
import type { TerminalExit } from './terminal-types.js';

const ENDED_KEPT = 256;

/** What the table is made with: the service's resolved options. */
export interface TerminalTableConfig {
  readonly owners: OwnerRegistry;
  readonly defaults: { readonly shell: string; readonly cwd: string; readonly cleanupGraceMs: number };
  /** The provider an owner's new terminals spawn through now (S2, its placement X4; a reload swaps the default). */
  readonly currentProvider: (owner: AgentOwnerToken) => SubprocessProvider;
  readonly retentionChars: number;
  readonly maxPerOwner: number;
  readonly inspect: ((event: InspectionEvent) => void) | undefined;
  /** The identity overlay of an owner's shells (S3: session and agent ids), applied last. */
  readonly identityEnv: (owner: AgentOwnerToken) => Readonly<Record<string, string>>;
  /** A1: the policy step that judges open, execute and send first; none: everything is allowed. */
  readonly decide: PolicyStep | undefined;
}

/**
 * The terminal service's shared state — open records, recently ended ones, session-exit
 * deliveries and counters — with the steps every operation shares: look a terminal up for an
 * owner (T9), take its one turn (T2), close it, and follow its session's exit. Each operation
 * (open/close, send, execute, read) lives in its own module and works on this table.
 *
 * @example
 * ```ts
 * const table = new TerminalTable(config);
 * const record = table.lookup(owner, id);
 * await table.withTurn(record, 'send', async () => { ... });
 * ```
 */
export class TerminalTable {
  readonly config: TerminalTableConfig;
  readonly records = new Map<string, TerminalRecord>();
  /**
   * Recently ended terminals, so a late call hears "it ended", not "no such terminal", and a
   * new session-exit listener can be replayed the exits nobody heard (S5).
   */
  readonly ended = new Map<
    string,
    { readonly ownerKey: string; readonly reason: string; readonly exit: TerminalExit | null }
  >();
  readonly exits = new CompletionHub<TerminalExit>((error, exit) =>
    process.emitWarning(`tether: a session-exit listener for terminal ${exit.id} failed: ${String(error)}`, {
      code: 'TETHER_TERMINAL',
    }),
  );
  /** Every provider a terminal was opened with: their PTY workers are this service's to report (D3). */
  readonly used = new Set<SubprocessProvider>();
  /** Opens in flight per owner: they count against the cap before their PTY exists. */
  readonly opening = new Map<string, number>();
  busy = 0;
  /** D3: timers armed by sends and executes in flight (deadlines, silence checks, graces). */
  readonly timers = new TimerCount();
  disposing: Promise<void> | null = null;

  constructor(config: TerminalTableConfig) {
    this.config = config;
  }

  /** The owner's terminal `id`; TERMINAL_CLOSED when it ended, TERMINAL_NOT_FOUND when not theirs (T9). */
  lookup(owner: AgentOwnerToken, id: string, retiredOk = false): TerminalRecord {
    const { owners } = this.config;
    const token = retiredOk ? owners.assertKnown(owner) : owners.assertLive(owner);
    assertArgument(typeof id === 'string' && id.length > 0, 'terminal id must be a non-empty string');
    const record = this.records.get(id);
    const ownerKey = owners.keyOf(token);
    const gone = this.ended.get(id);
    if (record === undefined && gone?.ownerKey === ownerKey) {
      throw new TetherError('TERMINAL_CLOSED', `terminal '${id}' has ended (${gone.reason}); open a new one`);
    }
    // T9: another owner's terminal is indistinguishable from one that does not exist.
    if (record === undefined || record.ownerKey !== ownerKey) {
      throw new TetherError('TERMINAL_NOT_FOUND', `no terminal '${id}' for this owner; list() shows yours`);
    }
    return record;
  }

  /** T2: one send or execute at a time, decided by the machine. */
  async withTurn<T>(
    record: TerminalRecord,
    activity: 'send' | 'execute',
    work: () => Promise<T>,
  ): Promise<T> {
    const snapshot = record.actor.getSnapshot();
    if (!snapshot.can({ type: 'BEGIN', activity })) {
      if (record.state === 'busy') {
        throw new TetherError(
          'TERMINAL_BUSY',
          `terminal '${record.id}' is busy with a ${snapshot.context.activity}; wait for it`,
        );
      }
      throw new TetherError('TERMINAL_CLOSED', `terminal '${record.id}' is ${record.state}; open a new one`);
    }
    record.actor.send({ type: 'BEGIN', activity });
    this.busy++;
    try {
      return await work();
    } finally {
      this.busy--;
      // A session that exited meanwhile already took the terminal to closing/closed.
      if (record.actor.getSnapshot().status === 'active') record.actor.send({ type: 'END' });
    }
  }

  /** Asks the terminal's machine to close; resolves once its tree was swept. */
  closeRecord(record: TerminalRecord): Promise<void> {
    record.actor.send({ type: 'CLOSE' }); // ignored once closing: the machine's guard
    return record.closed;
  }

  /** Remembers a closed terminal (bounded) and publishes its session exit, if it had one. */
  forget(record: TerminalRecord): void {
    const { id, ownerKey } = record;
    this.records.delete(id);
    const exit = record.endReason === 'session_exit' && !record.hidden ? record.exit : null;
    this.ended.set(id, { ownerKey, reason: exit ? 'its session exited' : 'closed', exit });
    if (this.ended.size > ENDED_KEPT) {
      const oldest = this.ended.keys().next().value!;
      this.ended.delete(oldest);
      this.exits.forget(oldest);
    }
    if (exit) this.exits.publish(ownerKey, exit);
  }

  /** A session that ends on its own closes its terminal, unless execute is replacing the shell. */
  watchExit(record: TerminalRecord): void {
    const pty = record.pty;
    void pty.exited.then(({ exitCode, signal, reason }) => {
      if (record.pty !== pty || record.executing) return;
      if (record.actor.getSnapshot().can({ type: 'SESSION_EXIT' })) {
        const { id, shell, cwd, pid, openedAt } = record.info();
        record.exit = { id, shell, cwd, pid, openedAt, endedAt: Date.now(), exitCode, signal, reason };
      }
      record.actor.send({ type: 'SESSION_EXIT' });
    });
  }
}
