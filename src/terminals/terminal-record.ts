import type { Actor } from 'xstate';
import type { terminalMachine } from '../../machines/terminal.js';
import { RetainedOutput } from '../output/retained-output.js';
import type { SubprocessProvider, TerminalHandle, TerminalSpawnSpec } from '../subprocess/types.js';
import { MarkerFilter } from './marker-filter.js';
import { ScreenTail } from './screen.js';
import { carriesShellRc, PROMPT_MARKER } from './shell-protocol.js';
import { TimerCount } from './terminal-timers.js';
import type { TerminalExit, TerminalInfo } from './terminal-types.js';

/**
 * One open terminal as the service holds it: its actor (the lifecycle's only truth), the PTY
 * session currently behind it (replaced when `execute` resets the shell), and its retained
 * output. The raw stream goes through the marker filter (T7: no markers, no wrapper echo) into
 * the retention buffer and the screen tail.
 */

/** At most this long the first send or execute of a fresh shell waits for its first prompt. */
export const FIRST_PROMPT_WAIT_MS = 10_000;

export class TerminalRecord {
  readonly id: string;
  readonly ownerKey: string;
  readonly actor: Actor<typeof terminalMachine>;
  readonly spec: TerminalSpawnSpec;
  /** The provider that spawned it; a shell reset (T7) spawns through it again. */
  readonly provider: SubprocessProvider;
  /** Left out of `list` and session-exit completions (persistent bash's terminal). */
  readonly hidden: boolean;
  readonly output: RetainedOutput;
  readonly openedAt: number;
  #pty: TerminalHandle;
  #unsubscribe: () => void;
  readonly #filter = new MarkerFilter();
  /** Resolves when the current shell drew its first prompt (only shells started with our rc file). */
  #prompted: Promise<void> | null = null;
  /** Recent raw output for `screen` (independent of the read cursor). */
  readonly screenTail = new ScreenTail();
  /** Set while `execute` owns the shell's fate (an exit then means "restart", not "closed"). */
  executing = false;
  /** How the session ended on its own, once it did (the terminal's completion). */
  exit: TerminalExit | null = null;
  /** Resolves when the terminal's actor reached `closed` (its tree was swept). */
  readonly closed: Promise<void>;

  constructor(init: {
    id: string;
    ownerKey: string;
    actor: Actor<typeof terminalMachine>;
    spec: TerminalSpawnSpec;
    provider: SubprocessProvider;
    hidden: boolean;
    pty: TerminalHandle;
    retentionChars: number;
    openedAt: number;
  }) {
    this.id = init.id;
    this.ownerKey = init.ownerKey;
    this.actor = init.actor;
    this.spec = init.spec;
    this.provider = init.provider;
    this.hidden = init.hidden;
    this.output = new RetainedOutput(init.retentionChars);
    this.openedAt = init.openedAt;
    this.#pty = init.pty;
    this.#unsubscribe = this.#attach(init.pty);
    this.closed = new Promise((resolve) => {
      const subscription = this.actor.subscribe({
        complete: () => {
          subscription.unsubscribe();
          resolve();
        },
      });
    });
  }

  /** Why the terminal ended, once it did. */
  get endReason(): string | null {
    return this.actor.getSnapshot().context.endReason;
  }

  get pty(): TerminalHandle {
    return this.#pty;
  }

  /** Puts a fresh shell behind this terminal (T7 shell reset); output keeps flowing into one buffer. */
  replacePty(pty: TerminalHandle): void {
    this.#unsubscribe();
    this.#pty = pty;
    this.#unsubscribe = this.#attach(pty);
  }

  get state(): TerminalInfo['state'] {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status === 'done') return 'closed';
    return snapshot.value as TerminalInfo['state'];
  }

  info(): TerminalInfo {
    return {
      id: this.id,
      state: this.state,
      shell: this.spec.argv[0],
      cwd: this.spec.cwd,
      cols: this.spec.cols,
      rows: this.spec.rows,
      pid: this.#pty.identity.pid,
      openedAt: this.openedAt,
    };
  }

  /**
   * T7 on the transcript: until `execute`'s start marker for `nonce`, the shell's echo of
   * `line` is shown as `command` (see {@link MarkerFilter.expectEcho}). Call the returned
   * function when the execute is over.
   */
  expectEcho(nonce: string, line: string, command: string): () => void {
    this.#filter.expectEcho(nonce, line, command);
    return () => this.#show(this.#filter.push(this.#filter.endEcho()));
  }

  /**
   * Waits until the current shell drew its first prompt (it exited, or `boundMs` passed): input
   * typed before bash set up its line editor is echoed twice and read half-ready, so the first
   * send or execute of a fresh shell waits for it. Immediate afterwards, and for other shells.
   */
  async shellReady(boundMs: number, timers: TimerCount = new TimerCount()): Promise<void> {
    if (this.#prompted === null) return;
    const stop = new AbortController();
    try {
      await Promise.race([
        this.#prompted,
        this.#pty.exited,
        timers.sleep(boundMs, undefined, { signal: stop.signal }).catch(() => {}),
      ]);
    } finally {
      stop.abort();
    }
  }

  #attach(pty: TerminalHandle): () => void {
    let markPrompted: (() => void) | null = null;
    let seen = '';
    this.#prompted = carriesShellRc(this.spec.env)
      ? new Promise((resolve) => {
          markPrompted = resolve;
        })
      : null;
    return pty.onData((text) => {
      if (markPrompted !== null) {
        // The marker may be split across two batches: keep the end of the previous one.
        seen = seen.slice(-PROMPT_MARKER.length) + text;
        if (seen.includes(PROMPT_MARKER)) {
          markPrompted();
          markPrompted = null;
          this.#prompted = null;
        }
      }
      this.#show(this.#filter.push(text));
    });
  }

  #show(visible: string): void {
    if (visible === '') return;
    this.output.append(visible);
    this.screenTail.push(visible);
  }
}
