import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { CompletionSources } from '../../completions/completion-sources.js';
import type { AgentOwnerToken } from '../../owners/owner-token.js';
import { fitBudget } from '../../tools/tool-output.js';
import type { OwnerTools, ToolInputSchema, ToolResult } from '../../tools/tool-types.js';
import { forwardCompletions } from './mcp-notices.js';

/** What one MCP connection serves. */
export interface McpServerOptions {
  /** The tools, already bound to this connection's owner (O3: one owner per connection). */
  readonly tools: OwnerTools;
  /** Where that owner's completions come from: its jobs and terminals. */
  readonly completions: CompletionSources;
  readonly owner: AgentOwnerToken;
  /** The registry's output budget: appended notices stay within it too. */
  readonly outputBudgetChars: number;
  readonly version: string;
  /** Protocol-side failures (a notice that could not be sent); default: ignored. */
  readonly onError?: (err: unknown) => void;
}

/** An MCP server for one connection, and how to stop its notices. */
export interface McpConnection {
  readonly server: Server;
  /** Stops forwarding completions (call before closing the transport). */
  stopNotices(): void;
}

const INSTRUCTIONS = `Tether runs shell commands, background jobs and interactive terminals for you.
- bash runs a command to its end; with run_in_background: true it starts a job and returns its id.
- Follow jobs with job_wait, job_read and job_kill. When a job finishes, the server sends a logging notification (notifications/message, logger "tether", data.event "job_completed") and adds a [notice] line to your next tool result.
- terminal_open and terminal_send drive interactive programs; terminal_send says whether the program is waiting for your input. A terminal whose shell exits on its own is reported the same way (data.event "terminal_exited").
Everything you start ends when you disconnect.`;

/**
 * Creates the MCP server for one client connection: `tools/list` and `tools/call` straight
 * from the registry's JSON schemas, completion notices as `notifications/message`. Connect it
 * to a transport with `server.connect(transport)`.
 *
 * @example
 * ```ts
 * const { server, stopNotices } = createMcpServer({
 *   tools: bindTools(registry, lease.token), completions: rt, owner: lease.token,
 *   outputBudgetChars: 30_000, version: '0.1.0',
 * });
 * await server.connect(new StdioServerTransport());
 * ```
 */
export function createMcpServer(options: McpServerOptions): McpConnection {
  const { tools, outputBudgetChars } = options;
  const server = new Server(
    { name: 'tether', version: options.version },
    { capabilities: { tools: {}, logging: {} }, instructions: INSTRUCTIONS },
  );
  const notices = forwardCompletions(
    options.completions,
    options.owner,
    server,
    options.onError ?? (() => {}),
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.list().map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: mcpInputSchema(tool.inputSchema),
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const result = await tools.call(request.params.name, request.params.arguments, { signal: extra.signal });
    const notes = notices.takeNotes(result.text);
    const text = notes.length === 0 ? result.text : `${result.text}\n\n${notes.join('\n')}`;
    return toCallToolResult(result, fitBudget(text, outputBudgetChars));
  });

  return { server, stopNotices: () => notices.dispose() };
}

// A fresh, mutable copy of a registry schema in the SDK's `Tool['inputSchema']` shape.
function mcpInputSchema(schema: ToolInputSchema): Tool['inputSchema'] {
  const { required, ...copy } = structuredClone(schema);
  return { ...copy, properties: { ...copy.properties }, ...(required ? { required: [...required] } : {}) };
}

// A tool result in MCP's shape: the text for the model, the facts as structured content.
function toCallToolResult(result: ToolResult, text: string): CallToolResult {
  return {
    content: [{ type: 'text', text }],
    isError: !result.ok,
    structuredContent: result.ok ? { ...result.data } : { error: { code: result.code } },
  };
}
