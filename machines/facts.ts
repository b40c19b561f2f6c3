/**
 * The facts the machines carry (the ground floor): a job's final facts and a terminal's exit.
 * Declared here so that `machines/` imports nothing from `src/`; the services re-export them.
 */

/** A job's lifecycle state (SPEC J2). `running` covers both "active" and "cancel requested". */
export type JobState = 'running' | 'succeeded' | 'failed' | 'killed';

/**
 * A job's facts as its owner sees them (SPEC R). `isTerminal` separates live from final;
 * `cancelRequested` says a kill was asked for, which is visible before the job is `killed`.
 * `error` is the producer's own failure text (not a non-zero exit), or `null`.
 */
export interface JobInfo {
  readonly id: string;
  readonly kind: string;
  readonly label: string;
  readonly state: JobState;
  readonly isTerminal: boolean;
  readonly cancelRequested: boolean;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly error: string | null;
  readonly startedAt: number;
  readonly endedAt: number | null;
}

/**
 * A terminal whose session ended on its own — its shell exited (`exit`), or the PTY host
 * worker died (`host_crashed`) — reported once its tree was swept. This is the terminal's
 * completion: its owner's listeners (`onSessionExit`) and agents' notices carry it. A terminal
 * ended by `close`, a drain or dispose is not reported: its owner asked for that.
 */
export interface TerminalExit {
  readonly id: string;
  readonly shell: string;
  readonly cwd: string;
  /** The shell's pid (the session leader). */
  readonly pid: number;
  readonly openedAt: number;
  readonly endedAt: number;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: 'exit' | 'host_crashed';
}
