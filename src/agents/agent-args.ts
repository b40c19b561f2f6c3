import { assertArgument, TetherError } from '../errors.js';
import type { AgentOptions, AgentServiceOptions, Drainable, WakePolicy } from './agent-types.js';

/** `AgentOptions` with defaults filled in. */
export interface ResolvedAgentOptions {
  readonly sessionId: string;
  readonly wake: WakePolicy;
  readonly maxWakes: number;
  readonly onTurn: AgentOptions['onTurn'];
  readonly onNotice: AgentOptions['onNotice'];
}

const DEFAULT_MAX_WAKES = 3;

/**
 * Validates `create` options (`INVALID_ARGUMENT` naming the field) and fills defaults.
 *
 * @example
 * ```ts
 * resolveAgentOptions({ sessionId: 's1', onTurn }); // { wake: 'wakeup', maxWakes: 3, … }
 * ```
 */
export function resolveAgentOptions(options: AgentOptions): ResolvedAgentOptions {
  assertArgument(
    typeof options === 'object' && options !== null,
    'agent options must be an object { sessionId, onTurn }',
  );
  const { sessionId, wake = 'wakeup', maxWakes = DEFAULT_MAX_WAKES, onTurn, onNotice } = options;
  assertArgument(
    typeof sessionId === 'string' && sessionId.length > 0,
    'sessionId must be a non-empty string',
  );
  assertArgument(
    wake === 'wakeup' || wake === 'quiet',
    `wake must be 'wakeup' or 'quiet' (got ${String(wake)})`,
  );
  assertArgument(
    Number.isSafeInteger(maxWakes) && maxWakes >= 0,
    `maxWakes must be an integer >= 0 (got ${String(maxWakes)})`,
  );
  assertArgument(typeof onTurn === 'function', 'onTurn must be a function (turn) => void | Promise<void>');
  assertArgument(
    onNotice === undefined || typeof onNotice === 'function',
    'onNotice must be a function (notice) => void | Promise<void> when given',
  );
  return { sessionId, wake, maxWakes, onTurn, onNotice };
}

/** Service options with defaults filled in. */
export interface ResolvedServiceOptions {
  readonly drainables: readonly Drainable[];
  readonly quietWindowMs: number;
  readonly turnGraceMs: number;
}

/**
 * Validates `createAgentService` options and fills the numeric defaults.
 *
 * @example
 * ```ts
 * resolveServiceOptions({ owners, jobs }); // { drainables: [], quietWindowMs: 50, turnGraceMs: 5000 }
 * ```
 */
export function resolveServiceOptions(options: AgentServiceOptions): ResolvedServiceOptions {
  assertArgument(typeof options === 'object' && options !== null, 'agent service options must be an object');
  if (typeof options.owners?.agent !== 'function' || typeof options.jobs?.onCompletion !== 'function') {
    throw new TetherError(
      'INVALID_ARGUMENT',
      'createAgentService needs { owners, jobs } from the same runtime',
    );
  }
  const { drainables = [], quietWindowMs = 50, turnGraceMs = 5_000 } = options;
  assertArgument(
    Array.isArray(drainables) && drainables.every((d) => typeof d?.drainOwner === 'function'),
    'drainables must be an array of services with drainOwner(owner)',
  );
  for (const [name, value] of [
    ['quietWindowMs', quietWindowMs],
    ['turnGraceMs', turnGraceMs],
  ] as const) {
    assertArgument(
      Number.isSafeInteger(value) && value >= 0,
      `${name} must be an integer number of ms >= 0 (got ${String(value)})`,
    );
  }
  return { drainables, quietWindowMs, turnGraceMs };
}
