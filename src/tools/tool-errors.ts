import { TetherError } from '../errors.js';
import { PolicyDeniedError } from '../policy/policy-denied.js';
import { policyNextStep } from './policy-text.js';
import { type FailedCall, modelFailure } from './tool-error-text.js';
import type { ToolErrorCode, ToolResult } from './tool-types.js';

/**
 * A failed tool result: `Error <CODE>: <message>`, then the next step on its own line.
 *
 * @example
 * ```ts
 * failure('TOOL_NOT_FOUND', "there is no tool named 'bsh'", 'Available tools: bash, job_list, …');
 * ```
 */
export function failure(code: ToolErrorCode, message: string, next?: string): ToolResult {
  return { ok: false, code, text: `Error ${code}: ${message}${next ? `\n${next}` : ''}` };
}

/**
 * Turns what a tool threw into a failed result. A `TetherError` keeps its stable code and is
 * reworded for a model ({@link modelFailure}: no owners, no method names, the tool to call
 * next); anything else is `TOOL_FAILED` (a bug or an environment fault, with its message).
 *
 * @example
 * ```ts
 * try { ... } catch (err) { return errorResult(err, { tool: 'job_read', args }); }
 * ```
 */
export function errorResult(err: unknown, call: FailedCall): ToolResult {
  // A1, A4: a denial already speaks to the model; its next step depends on who denied it.
  if (err instanceof PolicyDeniedError) return failure(err.code, err.message, policyNextStep(err));
  if (err instanceof TetherError) {
    const { message, next } = modelFailure(err, call);
    return failure(err.code, message, next);
  }
  const message = err instanceof Error ? err.message : String(err);
  return failure('TOOL_FAILED', message, 'This is an internal failure; retrying may or may not help.');
}
