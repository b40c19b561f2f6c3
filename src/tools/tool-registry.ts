import { assertArgument } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { bashTool } from './bash-tool.js';
import { jobTools } from './job-tools.js';
import { terminalTools } from './terminal-tools.js';
import { errorResult, failure } from './tool-errors.js';
import { fitBudget } from './tool-output.js';
import { createArgumentChecker } from './tool-schema.js';
import type {
  OwnerTools,
  ToolContext,
  ToolDescriptor,
  ToolRegistry,
  ToolRegistryOptions,
  ToolRuntime,
} from './tool-types.js';

/** Default characters of text one tool result may take. */
export const DEFAULT_OUTPUT_BUDGET_CHARS = 30_000;
const MIN_OUTPUT_BUDGET_CHARS = 2_000;

/**
 * Creates the model tools over a runtime (SPEC section 8): `bash`, `job_list`, `job_read`,
 * `job_wait`, `job_kill`, `terminal_open`, `terminal_send`, `terminal_read`, `terminal_signal`,
 * `terminal_close`, `terminal_list`.
 *
 * Every call is checked in this order, and fails closed as a result (never a throw): the owner
 * is live (O3: `OWNER_INVALID` / `OWNER_RETIRED`), the tool exists (`TOOL_NOT_FOUND`), the
 * arguments match its schema (`INVALID_ARGUMENT`, naming each field; unknown fields such as
 * `owner` are rejected), the call's signal is not aborted (`ABORTED`). Then the tool runs;
 * service errors keep their stable codes. The text always fits `outputBudgetChars`.
 *
 * @example
 * ```ts
 * const rt = await createRuntime();
 * const tools = createToolRegistry(rt, { persistentBash: true });
 * const lease = rt.owners.host();
 * const r = await tools.call(lease.token, 'bash', { command: 'cd /tmp && pwd' });
 * if (r.ok) console.log(r.text); // '/tmp\n[exit code 0]'
 * ```
 */
export function createToolRegistry(rt: ToolRuntime, opts: ToolRegistryOptions = {}): ToolRegistry {
  const budget = opts.outputBudgetChars ?? DEFAULT_OUTPUT_BUDGET_CHARS;
  assertArgument(
    Number.isSafeInteger(budget) && budget >= MIN_OUTPUT_BUDGET_CHARS,
    `outputBudgetChars must be an integer >= ${MIN_OUTPUT_BUDGET_CHARS}, got ${String(budget)}`,
  );
  const persistentBash = opts.persistentBash ?? false;
  const tools = [bashTool(persistentBash), ...jobTools, ...terminalTools];
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const check = createArgumentChecker(tools);
  const descriptors: readonly ToolDescriptor[] = deepFreeze(
    tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
  );
  // Per-owner read cursors and flags; a WeakMap lets a retired owner's state go with its token.
  const states = new WeakMap<AgentOwnerToken, Pick<ToolContext, 'cursors' | 'seen'>>();
  const stateOf = (owner: AgentOwnerToken) => {
    let state = states.get(owner);
    if (state === undefined) {
      state = { cursors: new Map(), seen: new Set() };
      states.set(owner, state);
    }
    return state;
  };

  return {
    list: () => [...descriptors],
    async call(owner, name, args, callOpts = {}) {
      try {
        // O3: the owner is checked before anything else, by the service that guards it.
        await rt.jobs.list(owner);
        const tool = byName.get(name);
        if (tool === undefined) {
          return failure(
            'TOOL_NOT_FOUND',
            `there is no tool named '${String(name)}'`,
            `Available tools: ${[...byName.keys()].join(', ')}.`,
          );
        }
        const checked = check(name, args);
        if (!checked.ok) {
          return failure(
            'INVALID_ARGUMENT',
            `invalid arguments for ${name}: ${checked.problems.join('; ')}`,
            'Fix the arguments and call the tool again.',
          );
        }
        if (callOpts.signal?.aborted)
          return failure('ABORTED', `the ${name} call was cancelled before it ran`, 'Nothing was started.');
        const ctx: ToolContext = {
          rt,
          owner,
          signal: callOpts.signal,
          budget,
          persistentBash,
          ...stateOf(owner),
        };
        const out = await tool.run(ctx, checked.args);
        return { ok: true, text: fitBudget(out.text, budget), data: out.data };
      } catch (err) {
        return errorResult(err, { tool: String(name), args });
      }
    },
  };
}

/**
 * Binds a registry to one owner: what an agent exposes as `agent.tools`, and what the MCP
 * adapter serves for one connection. The owner comes from the caller, never from arguments.
 *
 * @example
 * ```ts
 * const tools = bindTools(registry, agent.owner);
 * await tools.call('job_list', {});
 * ```
 */
export function bindTools(registry: ToolRegistry, owner: AgentOwnerToken): OwnerTools {
  return {
    list: () => registry.list(),
    call: (name, args, opts) => registry.call(owner, name, args, opts),
  };
}

// Descriptors are shared by every caller: nobody may edit a schema in place.
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
