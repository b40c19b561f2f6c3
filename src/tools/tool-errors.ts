import { TetherError, type TetherErrorCode } from '../errors.js';
import { PolicyDeniedError } from '../policy/policy-denied.js';
import { policyNextStep } from './policy-text.js';
import type { ToolErrorCode, ToolResult } from './tool-types.js';

// What a model should do next, per code, beyond the service's own message.
const NEXT_STEP: Partial<Record<TetherErrorCode, string>> = {
  OWNER_RETIRED: 'This session has ended: no tool can be used any more. Stop calling tools.',
  OWNER_INVALID: 'The caller has no valid owner; this is a host integration error, not yours to fix.',
  JOB_NOT_FOUND: 'Call job_list to see the ids of your jobs.',
  JOB_FORBIDDEN: 'Call job_list to see the ids of your jobs.',
  JOB_LIMIT: 'Wait for a job with job_wait, or stop one with job_kill, then start this one again.',
  TERMINAL_NOT_FOUND: 'Call terminal_list to see your open terminals, or terminal_open for a new one.',
  TERMINAL_FORBIDDEN: 'Call terminal_list to see your open terminals, or terminal_open for a new one.',
  TERMINAL_CLOSED: 'That terminal is gone; open a new one with terminal_open.',
  TERMINAL_BUSY:
    'Another terminal_send to this terminal is still running; wait for it to return before sending again.',
  TERMINAL_LIMIT: 'Close a terminal you no longer need with terminal_close, then open again.',
  CWD_NOT_FOUND: 'Use an existing directory.',
  RUNTIME_DISPOSED: 'The runtime is shutting down; no tool can be used any more.',
  ABORTED: 'The call was cancelled; whatever it had started was interrupted.',
};

/**
 * A failed tool result: `Error <CODE>: <message> <next step>`.
 *
 * @example
 * ```ts
 * failure('TOOL_NOT_FOUND', "no tool named 'bsh'", 'Available tools: bash, job_list, …');
 * ```
 */
export function failure(code: ToolErrorCode, message: string, next?: string): ToolResult {
  const hint = next ?? NEXT_STEP[code as TetherErrorCode];
  return { ok: false, code, text: `Error ${code}: ${message}${hint ? `\n${hint}` : ''}` };
}

/**
 * Turns what a tool threw into a failed result. A `TetherError` keeps its stable code; anything
 * else is `TOOL_FAILED` (a bug or an environment fault, reported with its message).
 *
 * @example
 * ```ts
 * try { ... } catch (err) { return errorResult(err); }
 * ```
 */
export function errorResult(err: unknown): ToolResult {
  if (err instanceof PolicyDeniedError) return failure(err.code, err.message, policyNextStep(err));
  if (err instanceof TetherError) return failure(err.code, err.message);
  const message = err instanceof Error ? err.message : String(err);
  return failure('TOOL_FAILED', message, 'This is an internal failure; retrying may or may not help.');
}
