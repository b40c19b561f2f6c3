import { TetherError } from '../errors.js';
import type { JobHooks, JobSpec } from './job-types.js';

/** The longest `wait` Node can arm as one timer (2^31 - 1 ms, about 24.8 days). */
export const MAX_WAIT_MS = 2_147_483_647;

const invalid = (message: string): TetherError => new TetherError('INVALID_ARGUMENT', message);

/**
 * Throws `INVALID_ARGUMENT` unless `spec` is a usable {@link JobSpec}.
 *
 * @example
 * ```ts
 * assertJobSpec({ kind: 'shell', label: 'ls', run }); // ok
 * ```
 */
export function assertJobSpec(spec: unknown): asserts spec is JobSpec {
  if (typeof spec !== 'object' || spec === null) throw invalid('spec must be a JobSpec object');
  const { kind, label, outputCap, run } = spec as Partial<JobSpec>;
  if (typeof kind !== 'string' || kind.length === 0) throw invalid('spec.kind must be a non-empty string');
  if (typeof label !== 'string') throw invalid('spec.label must be a string');
  if (typeof run !== 'function') throw invalid('spec.run must be a function returning { cancel, done }');
  if (outputCap !== undefined && !(Number.isSafeInteger(outputCap) && outputCap > 0)) {
    throw invalid(
      `spec.outputCap must be a positive integer number of characters (got ${String(outputCap)})`,
    );
  }
}

/**
 * Throws `INVALID_ARGUMENT` unless `run()` returned the hooks J1 requires.
 *
 * @example
 * ```ts
 * assertJobHooks(await spec.run(ctx));
 * ```
 */
export function assertJobHooks(hooks: unknown): asserts hooks is JobHooks {
  const h = hooks as Partial<JobHooks> | null | undefined;
  const ok =
    typeof h === 'object' &&
    h !== null &&
    typeof h.cancel === 'function' &&
    typeof (h.done as Promise<unknown> | undefined)?.then === 'function' &&
    (h.readOutput === undefined || typeof h.readOutput === 'function');
  if (!ok)
    throw invalid('spec.run() must return { cancel(): void, done: Promise<JobExit>, readOutput?(): string }');
}

/**
 * Throws unless `jobId` is a non-empty string.
 *
 * @example
 * ```ts
 * assertJobId(args.jobId);
 * ```
 */
export function assertJobId(jobId: unknown): asserts jobId is string {
  if (typeof jobId !== 'string' || jobId.length === 0) {
    throw invalid(`job id must be a non-empty string (got ${typeof jobId})`);
  }
}

/**
 * Throws unless `cursor` is a non-negative integer and `maxChars` a positive one.
 *
 * @example
 * ```ts
 * assertReadRange(page.cursor, 32_000);
 * ```
 */
export function assertReadRange(cursor: unknown, maxChars: unknown): asserts cursor is number {
  if (!(Number.isSafeInteger(cursor) && (cursor as number) >= 0)) {
    throw invalid(`cursor must be a non-negative integer (got ${String(cursor)}); start at 0`);
  }
  if (!(Number.isSafeInteger(maxChars) && (maxChars as number) > 0)) {
    throw invalid(`maxChars must be a positive integer (got ${String(maxChars)})`);
  }
}

/**
 * Throws unless `timeoutMs` is an integer in [0, MAX_WAIT_MS].
 *
 * @example
 * ```ts
 * assertTimeout(30_000);
 * ```
 */
export function assertTimeout(timeoutMs: unknown): asserts timeoutMs is number {
  if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs))) {
    throw invalid(`timeoutMs must be a finite number of milliseconds (got ${String(timeoutMs)})`);
  }
  if (timeoutMs < 0 || timeoutMs > MAX_WAIT_MS) {
    throw invalid(`timeoutMs must be between 0 and ${MAX_WAIT_MS} (got ${timeoutMs})`);
  }
}

/**
 * A producer's `done` value as a well-formed exit; anything else becomes a producer error.
 *
 * @example
 * ```ts
 * normalizeExit({ exitCode: 0, signal: null }); // { exitCode: 0, signal: null, error: null }
 * ```
 */
export function normalizeExit(value: unknown): {
  exitCode: number | null;
  signal: string | null;
  error: string | null;
} {
  const v = value as { exitCode?: unknown; signal?: unknown; error?: unknown } | null | undefined;
  const exitCode = v?.exitCode;
  const signal = v?.signal;
  const error = v?.error;
  const ok =
    typeof v === 'object' &&
    v !== null &&
    (exitCode === null || Number.isInteger(exitCode)) &&
    (signal === null || typeof signal === 'string') &&
    (error === undefined || error === null || typeof error === 'string');
  if (!ok) return { exitCode: null, signal: null, error: 'producer done resolved with a malformed exit' };
  return {
    exitCode: exitCode as number | null,
    signal: signal as string | null,
    error: (error as string | null | undefined) ?? null,
  };
}

/**
 * `value` if it is a positive safe integer, else `INVALID_ARGUMENT` naming `name`.
 *
 * @example
 * ```ts
 * const limit = positiveInteger('maxRunningPerOwner', options.maxRunningPerOwner ?? 8);
 * ```
 */
export function positiveInteger(name: string, value: unknown): number {
  if (!(Number.isSafeInteger(value) && (value as number) > 0)) {
    throw invalid(`${name} must be a positive integer (got ${String(value)})`);
  }
  return value as number;
}
