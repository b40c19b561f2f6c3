import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { JsonSchema, ToolDefinition, ToolInputSchema } from './tool-types.js';

/** The outcome of checking a call's arguments against its tool's schema. */
export type ArgumentCheck =
  | { readonly ok: true; readonly args: Record<string, unknown> }
  | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Declares a tool with typed arguments; the registry validates against `inputSchema` before
 * `run` sees them, so `Args` may be trusted inside `run`.
 *
 * @example
 * ```ts
 * const ping = defineTool<{ text: string }>({
 *   name: 'ping', description: 'Echoes text.',
 *   inputSchema: objectSchema({ text: { type: 'string' } }, ['text']),
 *   run: async (_ctx, { text }) => ({ text, data: { text } }),
 * });
 * ```
 */
export function defineTool<Args>(tool: ToolDefinition<Args>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * An object schema that names every property it accepts and rejects the rest (O3: no argument
 * can smuggle in an `owner`).
 *
 * @example
 * ```ts
 * objectSchema({ job_id: { type: 'string', minLength: 1 } }, ['job_id']);
 * ```
 */
export function objectSchema(
  properties: Readonly<Record<string, JsonSchema>>,
  required: readonly string[] = [],
): ToolInputSchema {
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/**
 * Compiles each tool's schema once and checks arguments with messages a model can act on:
 * which field, what was expected, what it sent.
 *
 * @example
 * ```ts
 * const check = createArgumentChecker(tools);
 * check('bash', { command: 1 }); // { ok: false, problems: ["'command' must be a string, got 1"] }
 * ```
 */
export function createArgumentChecker(
  tools: readonly ToolDefinition[],
): (name: string, args: unknown) => ArgumentCheck {
  const ajv = new Ajv({ allErrors: true, strict: true });
  const validators = new Map<string, { validate: ValidateFunction; schema: ToolInputSchema }>();
  for (const tool of tools) {
    validators.set(tool.name, { validate: ajv.compile(tool.inputSchema), schema: tool.inputSchema });
  }
  return (name, args) => {
    const entry = validators.get(name);
    if (entry === undefined) throw new Error(`no schema for tool '${name}'`);
    // MCP clients send no `arguments` for a tool without parameters.
    const value = args === undefined || args === null ? {} : args;
    if (typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, problems: [`arguments must be a JSON object, got ${describe(value)}`] };
    }
    if (entry.validate(value)) return { ok: true, args: value as Record<string, unknown> };
    const problems = (entry.validate.errors ?? []).map((error) => explain(error, entry.schema, value));
    return { ok: false, problems: [...new Set(problems)] };
  };
}

// One Ajv error as a sentence naming the field and what it expected.
function explain(error: ErrorObject, schema: ToolInputSchema, args: object): string {
  const field = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const got = field === '' ? args : (args as Record<string, unknown>)[field.split('.')[0]!];
  const params = error.params as Record<string, unknown>;
  const expects = (name: string) => describeField(schema.properties[name]);
  switch (error.keyword) {
    case 'additionalProperties': {
      const extra = String(params.additionalProperty);
      return `unknown field '${extra}' (this tool accepts only: ${Object.keys(schema.properties).join(', ') || 'no fields'})`;
    }
    case 'required': {
      const missing = String(params.missingProperty);
      return `missing required field '${missing}'${expects(missing)}`;
    }
    case 'type':
      return `'${field}' must be ${article(String(params.type))}, got ${describe(got)}`;
    case 'enum':
      return `'${field}' must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${describe(got)}`;
    case 'minLength':
      return params.limit === 1
        ? `'${field}' must not be empty`
        : `'${field}' must have at least ${params.limit} characters`;
    case 'minimum':
    case 'maximum':
      return `'${field}' must be ${params.comparison} ${params.limit}, got ${describe(got)}`;
    default:
      return `'${field || 'arguments'}' ${error.message ?? 'is invalid'}`;
  }
}

// " (integer: Total deadline in ms)" — the property's type and description, as a hint.
function describeField(property: JsonSchema | undefined): string {
  if (property === undefined) return '';
  const type = typeof property.type === 'string' ? property.type : 'value';
  const text = typeof property.description === 'string' ? `: ${property.description}` : '';
  return ` (${type}${text})`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

// A short, safe rendering of what the model sent.
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  const json = JSON.stringify(value) ?? String(value);
  const kind = value === null ? 'null' : typeof value;
  return json.length > 60 ? `${kind === 'object' ? 'an object' : `a ${kind}`}` : `${json}`;
}
