import type { TetherErrorCode } from '../errors.js';
import type { JobService } from '../jobs/job-types.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import type { ShellService } from '../shell/shell-types.js';
import type { PersistentBash } from '../terminals/persistent-bash.js';
import type { TerminalService } from '../terminals/terminal-types.js';

/**
 * The services the tools run on: a whole runtime, or the parts an embedder composes. The tools
 * depend on these service interfaces only, never on the composition root that builds them.
 *
 * @example
 * ```ts
 * const services: ToolRuntime = { shell: rt.shell, jobs: rt.jobs, terminals: rt.terminals, persistentBash: rt.persistentBash };
 * const tools = createToolRegistry(services);
 * ```
 */
export interface ToolRuntime {
  readonly shell: ShellService;
  readonly jobs: JobService;
  readonly terminals: TerminalService;
  readonly persistentBash: PersistentBash;
}

/** A JSON Schema fragment (the subset the tools use: draft-07 keywords, no `$ref`). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A tool's input schema: always an object that rejects properties it does not name (O3). */
export interface ToolInputSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties: false;
}

/**
 * What a model (or an MCP client) is told about a tool.
 *
 * @example
 * ```ts
 * const defs = tools.list().map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
 * ```
 */
export interface ToolDescriptor {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ToolInputSchema;
}

/**
 * Every failure code a tool result can carry: the runtime's codes, plus `TOOL_NOT_FOUND` (no
 * such tool) and `TOOL_FAILED` (an unexpected internal error; the text says what happened).
 */
export type ToolErrorCode = TetherErrorCode | 'TOOL_NOT_FOUND' | 'TOOL_FAILED';

/**
 * The outcome of one tool call. `text` is what a model reads, worded so it knows what to do
 * next and within the registry's output budget; `data` is the same facts as structured
 * values (always an object). Failures are data too: a call never throws.
 *
 * @example
 * ```ts
 * const r = await tools.call(owner, 'job_kill', { job_id: 'job_x' });
 * if (!r.ok && r.code === 'JOB_NOT_FOUND') { ... }
 * modelMessages.push({ role: 'tool', content: r.text });
 * ```
 */
export type ToolResult =
  | { readonly ok: true; readonly text: string; readonly data: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly code: ToolErrorCode; readonly text: string };

/** Options of one call. `signal` cancels what can be cancelled (a foreground `bash`, `job_wait`). */
export interface ToolCallOptions {
  readonly signal?: AbortSignal;
}

/**
 * The model tools over a runtime (SPEC section 8). The owner is always passed by the trusted
 * caller (an agent binds its own, the MCP adapter binds one per connection), never read from
 * the arguments (O3).
 *
 * @example
 * ```ts
 * const tools = createToolRegistry(rt);
 * const r = await tools.call(lease.token, 'bash', { command: 'ls' });
 * console.log(r.text);
 * ```
 */
export interface ToolRegistry {
  list(): ToolDescriptor[];
  call(owner: AgentOwnerToken, name: string, args: unknown, opts?: ToolCallOptions): Promise<ToolResult>;
}

/**
 * A registry bound to one owner: what `agent.tools` is.
 *
 * @example
 * ```ts
 * const tools: OwnerTools = bindTools(registry, agent.owner);
 * await tools.call('bash', { command: 'npm test', run_in_background: true }, { signal: turn.signal });
 * ```
 */
export interface OwnerTools {
  list(): ToolDescriptor[];
  call(name: string, args: unknown, opts?: ToolCallOptions): Promise<ToolResult>;
}

/**
 * Options of `createToolRegistry`.
 *
 * @example
 * ```ts
 * createToolRegistry(rt, { persistentBash: true, outputBudgetChars: 20_000 });
 * ```
 */
export interface ToolRegistryOptions {
  /**
   * Composition option (SPEC section 8): a foreground `bash` runs in the owner's hidden
   * persistent terminal (cwd, variables and functions carry over between calls) instead of a
   * fresh one-shot shell. Default `false`.
   */
  readonly persistentBash?: boolean;
  /** Characters a result's text may take at most; longer output keeps its tail. Default 30,000. */
  readonly outputBudgetChars?: number;
}

/** What a tool's `run` gets besides its validated arguments. Internal to `src/tools`. */
export interface ToolContext {
  readonly rt: ToolRuntime;
  readonly owner: AgentOwnerToken;
  readonly signal: AbortSignal | undefined;
  /** The output budget in characters. */
  readonly budget: number;
  readonly persistentBash: boolean;
  /** Where this owner's next read of a job or terminal continues, when the model gives no cursor. */
  readonly cursors: Map<string, number>;
  /** Per-owner flags the tools keep (e.g. "persistent shell used before"). */
  readonly seen: Set<string>;
}

/** What a successful tool run returns; the registry fits `text` to the budget. */
export interface ToolOutput {
  readonly text: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** One tool: its public descriptor and its body. Internal to `src/tools`. */
export interface ToolDefinition<Args = Record<string, unknown>> extends ToolDescriptor {
  run(ctx: ToolContext, args: Args): Promise<ToolOutput>;
}
