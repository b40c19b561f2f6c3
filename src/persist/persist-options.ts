import { join } from 'node:path';
import { TetherError } from '../errors.js';

/**
 * `createRuntime({ persist })` (K6): the runtime's processes run under a local helper daemon of
 * this name, so they outlive this process; a runtime started later with the same name (same
 * user, same `stateDir`) lists them (`rt.resumable()`) and adopts them.
 */
export interface PersistOptions {
  /** Letters, digits, `.`, `_`, `-` (1–64, not starting with `.`): one live runtime per name and user. */
  readonly name: string;
  /**
   * How long the helper keeps a tree nobody holds (the runtime died, or never adopted it), then
   * kills it to a verdict. Default 300,000 ms.
   */
  readonly lingerMs?: number;
}

/** {@link PersistOptions} with the default filled in. */
export interface ResolvedPersist {
  readonly name: string;
  readonly lingerMs: number;
}

const NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;
const LINGER_MAX_MS = 7 * 24 * 3600 * 1000;

/**
 * Checks `persist` (R): INVALID_ARGUMENT saying what a name and a linger may be.
 *
 * @example
 * ```ts
 * resolvePersist({ name: 'ci-1' }); // { name: 'ci-1', lingerMs: 300000 }
 * ```
 */
export function resolvePersist(persist: PersistOptions): ResolvedPersist {
  const fail = (why: string): never => {
    throw new TetherError('INVALID_ARGUMENT', `createRuntime options: persist.${why}`);
  };
  if (typeof persist !== 'object' || persist === null) fail('must be an object { name, lingerMs? }');
  const { name, lingerMs = 300_000 } = persist;
  if (typeof name !== 'string' || !NAME.test(name))
    fail(
      `name must be 1-64 letters, digits, '.', '_' or '-', not starting with '.', got ${JSON.stringify(name)}`,
    );
  if (!Number.isSafeInteger(lingerMs) || lingerMs < 1 || lingerMs > LINGER_MAX_MS)
    fail(`lingerMs must be an integer from 1 to ${LINGER_MAX_MS} (7 days), got ${String(lingerMs)}`);
  return { name, lingerMs };
}

/**
 * Where the helper of persisted runtime `name` keeps its socket, lock and log: one directory per
 * name below the state directory (which is per user), mode 0700.
 *
 * @example
 * ```ts
 * persistDir('/tmp/tether-state-0', 'ci-1'); // '/tmp/tether-state-0/persist/ci-1'
 * ```
 */
export function persistDir(stateDir: string, name: string): string {
  return join(stateDir, 'persist', name);
}
