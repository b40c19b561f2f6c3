import { Ajv, type ErrorObject } from 'ajv';
import { TetherError } from './errors.js';

const count = (minimum: number) => ({ type: 'integer', minimum, maximum: Number.MAX_SAFE_INTEGER });
const path = { type: 'string', minLength: 1 };
const object = { type: 'object' };

/**
 * Every option `createRuntime` takes and the shape of each (R): an unknown option or a
 * misspelt limit is refused, never ignored. Values whose meaning lives elsewhere (a sandbox,
 * a policy, a provider, functions) are only required to be objects here; their owners check
 * the rest.
 */
export const RUNTIME_OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    provider: object,
    sandbox: object,
    isolation: { enum: ['none', 'pid'] },
    spillDir: { anyOf: [path, { const: false }] },
    spill: { type: 'object', additionalProperties: false, properties: { durable: { type: 'boolean' } } },
    containment: { enum: ['cgroup', 'marker'] },
    stateDir: path,
    persist: {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, lingerMs: count(1) },
    },
    cwd: path,
    shell: path,
    nice: { type: 'integer', minimum: 0, maximum: 19 },
    env: {
      type: 'object',
      additionalProperties: false,
      properties: {
        identityPrefix: { type: 'string' },
        allow: { type: 'array', items: { type: 'string' } },
      },
    },
    inspect: {},
    tools: {
      type: 'object',
      additionalProperties: false,
      properties: { persistentBash: { type: 'boolean' }, outputBudgetChars: count(1) },
    },
    policy: object,
    log: {
      anyOf: [
        path,
        {
          type: 'object',
          additionalProperties: false,
          required: ['path'],
          properties: {
            path,
            inspection: { type: 'boolean' },
            samples: { type: 'boolean' },
            maxPendingBytes: count(1),
          },
        },
      ],
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        outputCapChars: count(200),
        cleanupGraceMs: count(0),
        drainMs: count(0),
        maxJobsPerOwner: count(1),
        jobRetentionChars: count(1),
        finishedJobRetentionChars: count(1),
        maxTerminalsPerOwner: count(1),
        terminalRetentionChars: count(1),
        quietWindowMs: count(0),
        turnGraceMs: count(0),
        spillBudgetBytes: count(0),
      },
    },
  },
} as const;

let validate: ReturnType<Ajv['compile']> | undefined;

/**
 * Throws INVALID_ARGUMENT naming every option that does not fit {@link RUNTIME_OPTIONS_SCHEMA}.
 *
 * @example
 * ```ts
 * assertRuntimeOptions({ limits: 5 }); // throws: createRuntime option 'limits' must be an object, got 5
 * ```
 */
export function assertRuntimeOptions(options: unknown): void {
  validate ??= new Ajv({ allErrors: true, strict: true, verbose: true }).compile(RUNTIME_OPTIONS_SCHEMA);
  if (validate(options)) return;
  const problems = [...new Set((validate.errors ?? []).filter(useful).map((e) => explain(e, options)))];
  throw new TetherError('INVALID_ARGUMENT', `createRuntime options: ${problems.join('; ')}`);
}

// `anyOf` repeats its branches' errors; the branch errors say more than the summary.
function useful(error: ErrorObject, _: number, all: readonly ErrorObject[]): boolean {
  return error.keyword !== 'anyOf' || all.length === 1;
}

function explain(error: ErrorObject, options: unknown): string {
  const field = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const name = `'${field || 'options'}'`;
  const got = field
    .split('.')
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], options);
  const params = error.params as Record<string, unknown>;
  const integer = error.parentSchema as { type?: unknown; minimum?: unknown; maximum?: unknown } | undefined;
  if (integer?.type === 'integer' && ['type', 'minimum', 'maximum'].includes(error.keyword)) {
    const range =
      integer.maximum === Number.MAX_SAFE_INTEGER
        ? `>= ${String(integer.minimum)}`
        : `from ${String(integer.minimum)} to ${String(integer.maximum)}`;
    return `${field} must be an integer ${range}, got ${describe(got)}`;
  }
  switch (error.keyword) {
    case 'additionalProperties':
      return `unknown option '${field ? `${field}.` : ''}${String(params.additionalProperty)}'`;
    case 'type':
      return `${name} must be ${/^[aeiou]/.test(String(params.type)) ? 'an' : 'a'} ${String(params.type)}, got ${describe(got)}`;
    case 'enum':
      return `${name} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${describe(got)}`;
    case 'const':
      return `${name} must be ${JSON.stringify(params.allowedValue)} or a path, got ${describe(got)}`;
    case 'minLength':
      return `${name} must not be empty`;
    case 'minimum':
    case 'maximum':
      return `${name} must be ${String(params.comparison)} ${String(params.limit)}, got ${describe(got)}`;
    default:
      return `${name} ${error.message ?? 'is invalid'}`;
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  return value !== null && typeof value === 'object'
    ? Array.isArray(value)
      ? 'an array'
      : 'an object'
    : String(value);
}
