import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Approver, Policy, PolicyRequest } from '../../policy/policy-types.js';

/**
 * Who answers the policy's asks for `tether mcp --approve` (SPEC A5): `elicit` asks the MCP
 * client's user (MCP `elicitation/create`), `allow` and `deny` answer every ask themselves.
 *
 * @example
 * ```ts
 * const mode: McpApproveMode = 'elicit';
 * ```
 */
export type McpApproveMode = 'elicit' | 'allow' | 'deny';

/**
 * The modes, for flag validation.
 *
 * @example
 * ```ts
 * MCP_APPROVE_MODES.includes(flag as McpApproveMode);
 * ```
 */
export const MCP_APPROVE_MODES: readonly McpApproveMode[] = ['elicit', 'allow', 'deny'];

/** How long the client's user has to answer; the request itself may wait a little longer. */
const ELICIT_TIMEOUT_MS = 300_000;

/**
 * The runtime policy of `tether mcp --approve MODE` (SPEC A5): commands run (the sandbox is
 * their guard) unless rules cannot judge them (`$(…)`, `eval`, `bash -c`, …) or they ask to run
 * outside the sandbox (A4): those are asked. `server()` is the connection's MCP server, read
 * at ask time (it is made after the runtime).
 *
 * @example
 * ```ts
 * let server: Server | null = null;
 * const rt = await createRuntime({ policy: mcpPolicy('elicit', () => server) });
 * ```
 */
export function mcpPolicy(mode: McpApproveMode, server: () => Server | null): Policy {
  return { default: 'allow', askTimeoutMs: ELICIT_TIMEOUT_MS, approve: mcpApprover(mode, server) };
}

function mcpApprover(mode: McpApproveMode, server: () => Server | null): Approver {
  if (mode === 'allow') return () => ({ decision: 'allow', reason: 'tether mcp --approve allow' });
  if (mode === 'deny') {
    return () => ({
      decision: 'deny',
      reason: 'this server answers every approval request with no (tether mcp --approve deny)',
    });
  }
  return async (request, signal) => {
    const connection = server();
    if (connection?.getClientCapabilities()?.elicitation === undefined) {
      return {
        decision: 'deny',
        reason:
          'it needs a person to approve it, and this MCP client cannot ask its user (it does not declare the ' +
          'elicitation capability); the server can be started with --approve allow or --approve deny instead',
      };
    }
    // `mode` left out: clients of the first elicitation revision know only forms.
    const result = await connection.request(
      {
        method: 'elicitation/create',
        params: {
          message: elicitMessage(request),
          requestedSchema: {
            type: 'object',
            properties: {
              allow: {
                type: 'boolean',
                title: 'Run it?',
                description: 'true runs the command; false refuses it',
              },
            },
            required: ['allow'],
          },
        },
      },
      ElicitResultSchema,
      { signal, timeout: ELICIT_TIMEOUT_MS + 5_000 },
    );
    if (result.action === 'accept' && result.content?.allow === true) {
      return { decision: 'allow', reason: 'the user approved it' };
    }
    return {
      decision: 'deny',
      reason:
        result.action === 'accept'
          ? 'the user refused it'
          : `the user dismissed the request (${result.action})`,
    };
  };
}

// What the client's user reads: what would run, where, why it is asked, and the model's words.
function elicitMessage(request: PolicyRequest): string {
  const lines = [
    request.escalate
      ? 'The agent asks to run a command OUTSIDE the sandbox:'
      : 'The agent asks to run a command that rules cannot judge:',
    `  ${request.command}`,
    `in ${request.cwd} (sandbox: ${request.sandbox.mode}).`,
  ];
  if (request.undecidable.length > 0) lines.push(`Why it is asked: ${request.undecidable.join('; ')}.`);
  const because = request.escalate?.justification ?? request.justification;
  if (because) lines.push(`The agent says: ${because}`);
  return lines.join('\n');
}
