/**
 * Every stable failure code Tether throws. Results (exit codes, timeouts, cancellation)
 * are never errors; only misuse is (SPEC C1).
 */
export type TetherErrorCode =
  | 'INVALID_ARGUMENT'
  | 'CWD_NOT_FOUND'
  | 'SPAWN_FAILED'
  | 'ABORTED'
  | 'RUNTIME_DISPOSED'
  | 'OWNER_RETIRED'
  | 'OWNER_INVALID'
  | 'INPUT_UNCLAIMED'
  | 'JOB_FORBIDDEN'
  | 'JOB_NOT_FOUND'
  | 'JOB_LIMIT'
  | 'TERMINAL_BUSY'
  | 'TERMINAL_NOT_FOUND'
  | 'TERMINAL_FORBIDDEN'
  | 'TERMINAL_LIMIT'
  | 'TERMINAL_CLOSED'
  | 'UNSUPPORTED_PLATFORM'
  | 'CONTAINMENT_UNAVAILABLE'
  | 'STATE_UNTRUSTED'
  | 'STATE_DIR_UNUSABLE'
  | 'POLICY_DENIED'
  | 'SANDBOX_UNAVAILABLE'
  | 'PROVIDER_UNAVAILABLE'
  | 'PROVIDER_LOST'
  | 'PERSIST_IN_USE';

/**
 * The one error class Tether throws. `code` is stable; `message` says what to do.
 *
 * @example
 * ```ts
 * try { await rt.jobs.read(owner, 'nope', 0); }
 * catch (err) { if (err instanceof TetherError && err.code === 'JOB_NOT_FOUND') { ... } }
 * ```
 */
export class TetherError extends Error {
  override readonly name = 'TetherError';
  readonly code: TetherErrorCode;

  constructor(code: TetherErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Throws INVALID_ARGUMENT unless `ok`; the message names the field and what was expected. */
export function assertArgument(ok: boolean, message: string): asserts ok {
  if (!ok) throw new TetherError('INVALID_ARGUMENT', message);
}
