import { MCP_APPROVE_MODES, type McpApproveMode } from '../adapters/mcp/mcp-approval.js';
import type { SandboxMode, SandboxOptions } from '../sandbox/sandbox-types.js';
import { UsageError } from './usage.js';

const SANDBOX_MODES: readonly SandboxMode[] = ['off', 'read-only', 'workspace-write'];

/**
 * `--sandbox MODE` of `tether run` and `tether mcp` (SPEC A5): the runtime's `sandbox` option,
 * or nothing when the flag is absent.
 *
 * @example
 * ```ts
 * const rt = await createRuntime({ ...sandboxFlag(values.sandbox, 'run') });
 * ```
 */
export function sandboxFlag(value: string | undefined, command: 'run' | 'mcp'): { sandbox?: SandboxOptions } {
  if (value === undefined) return {};
  if (!(SANDBOX_MODES as readonly string[]).includes(value)) {
    throw new UsageError(`--sandbox takes one of ${SANDBOX_MODES.join(', ')}, got '${value}'`, command);
  }
  return { sandbox: { mode: value as SandboxMode } };
}

/**
 * `--approve MODE` of `tether mcp` (SPEC A5).
 *
 * @example
 * ```ts
 * serveMcpOverStdio({ ...approveFlag(values.approve) });
 * ```
 */
export function approveFlag(value: string | undefined): { approve?: McpApproveMode } {
  if (value === undefined) return {};
  if (!(MCP_APPROVE_MODES as readonly string[]).includes(value)) {
    throw new UsageError(`--approve takes one of ${MCP_APPROVE_MODES.join(', ')}, got '${value}'`, 'mcp');
  }
  return { approve: value as McpApproveMode };
}
