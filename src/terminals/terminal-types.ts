import type { TerminalExit } from '../../machines/facts.js';
import type { CompletionSubscription } from '../completions/completion-hub.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { TerminalScreen } from './screen.js';

export type { TerminalScreen } from './screen.js';

/**
 * Why `send` returned (T5): `stdin_read` = proven that the foreground process group waits for
 * input on this terminal (Linux, T6); `inferred_idle` = output was silent for `settleMs`;
 * `timeout` = the total deadline passed; `session_exit` = the session ended.
 */
export type WaitReason = 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit';

/** Signals a terminal's foreground process group can be sent (T8). */
export const TERMINAL_SIGNALS = [
  'SIGINT',
  'SIGQUIT',
  'SIGTSTP',
  'SIGCONT',
  'SIGTERM',
  'SIGKILL',
  'SIGHUP',
] as const;
export type TerminalSignal = (typeof TERMINAL_SIGNALS)[number];

/** A terminal as its owner sees it. `state` is the terminal machine's state. */
export interface TerminalInfo {
  readonly id: string;
  readonly state: 'opening' | 'idle' | 'busy' | 'closing' | 'closed';
  readonly shell: string;
  readonly cwd: string;
  readonly cols: number;
  readonly rows: number;
  /** The shell's pid (the session leader). */
  readonly pid: number;
  readonly openedAt: number;
}

export type { TerminalExit } from '../../machines/facts.js';

/** A session-exit subscription: dispose it to stop deliveries (also `using sub = …`). */
export type TerminalSubscription = CompletionSubscription;

/**
 * What `send` saw: the raw output (escape sequences included) that arrived after the input
 * was written, the read cursor after it, whether anything was dropped, and why it returned.
 */
export interface TerminalSendResult {
  readonly output: string;
  readonly cursor: number;
  readonly lossy: boolean;
  readonly waitReason: WaitReason;
}

/**
 * What `execute` saw (T7): only what the command printed (no echo, prompts or markers; `\r\n`
 * folded to `\n`), its exit code, whether it timed out, and whether the shell had to be
 * restarted (its variables and cwd are then gone).
 */
export interface TerminalCommandResult {
  readonly output: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly shellReset: boolean;
}

/** One `read` of a terminal's retained output (T3): raw text, next cursor, and `lossy` on a hole. */
export interface TerminalChunk {
  readonly text: string;
  readonly cursor: number;
  readonly lossy: boolean;
}

export interface TerminalOpenOptions {
  /** The shell to run; default `/bin/bash`. Started interactive, without rc files. */
  readonly shell?: string;
  readonly cwd?: string;
  /** Overlay on the sanitized env: a string sets, `undefined` deletes (S3). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cols?: number;
  readonly rows?: number;
  /**
   * A terminal behind another abstraction (persistent bash): left out of `list` and of
   * session-exit completions, otherwise an ordinary terminal of the owner — it counts against
   * the owner's cap and is drained with the owner. Default false. The policy (A1) does not
   * judge its opening nor its `execute`: the layer that hides it judges each command first
   * (the persistent bash does); raw `send` into it is refused under a policy.
   */
  readonly hidden?: boolean;
}

/**
 * Persistent interactive terminals (SPEC section 4). Sessions belong to exactly one owner and
 * their ids are unguessable (T9); another owner gets `TERMINAL_NOT_FOUND`.
 *
 * @example
 * ```ts
 * const term = await rt.terminals.open(owner);
 * await rt.terminals.execute(owner, term.id, 'cd /tmp && export X=1');
 * const r = await rt.terminals.send(owner, term.id, 'read -p "name? " n\n');
 * r.waitReason; // 'stdin_read': the shell waits for our answer
 * await rt.terminals.close(owner, term.id);
 * ```
 */
export interface TerminalService {
  open(owner: AgentOwnerToken, opts?: TerminalOpenOptions): Promise<TerminalInfo>;
  send(
    owner: AgentOwnerToken,
    id: string,
    input: string,
    opts?: { settleMs?: number; timeoutMs?: number },
  ): Promise<TerminalSendResult>;
  execute(
    owner: AgentOwnerToken,
    id: string,
    command: string,
    opts?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<TerminalCommandResult>;
  read(owner: AgentOwnerToken, id: string, cursor: number, maxChars?: number): Promise<TerminalChunk>;
  /**
   * The terminal's screen as a person sees it, rendered by a headless xterm from the recent
   * output: no escape sequences, overwritten text resolved. Does not move the read cursor.
   */
  screen(owner: AgentOwnerToken, id: string): Promise<TerminalScreen>;
  signal(owner: AgentOwnerToken, id: string, signal: TerminalSignal): Promise<void>;
  close(owner: AgentOwnerToken, id: string): Promise<void>;
  list(owner: AgentOwnerToken): Promise<TerminalInfo[]>;
  /**
   * Calls `listener` once for each of the owner's terminals whose session ended on its own.
   * It joins first, then replays recent exits no listener heard (S5: nothing falls into a
   * gap between an old and a new listener, nothing is reported twice). Listener failures are
   * reported as a process warning and never retried.
   */
  onSessionExit(
    owner: AgentOwnerToken,
    listener: (exit: TerminalExit) => void | Promise<void>,
  ): TerminalSubscription;
  drainOwner(owner: AgentOwnerToken): Promise<void>;
  /** Live resource counts for tests and operators (D3). */
  stats(): TerminalServiceStats;
  /** Closes every terminal, then disposes the provider it made itself (a given one is its owner's; D2). Idempotent. */
  dispose(): Promise<void>;
}

export interface TerminalServiceStats {
  /** Terminals not yet closed. */
  readonly open: number;
  /** `send`/`execute` calls in flight. */
  readonly busy: number;
  /** Timers armed by those calls (deadlines, silence checks, interrupt graces): D3. */
  readonly timers: number;
  /** Whether a PTY worker thread of a provider this service opened terminals with is running. */
  readonly hostAlive: boolean;
  /** Session-exit listeners subscribed, and listener calls in flight. */
  readonly listeners: number;
  readonly deliveries: number;
}
