import { TERMINAL_SIGNALS, type TerminalSignal } from '../terminals/terminal-types.js';
import { terminalId, terminalIoTools } from './terminal-io-tools.js';
import { describeTerminal } from './terminal-text.js';
import { defineTool, objectSchema } from './tool-schema.js';
import type { ToolDefinition } from './tool-types.js';

const terminalOpen = defineTool<{ cwd?: string; cols?: number; rows?: number }>({
  name: 'terminal_open',
  description: `Opens a persistent interactive terminal (bash on a pseudo-terminal) and returns its id.
Use it for interactive programs (prompts, REPLs, password-less ssh, debuggers) and for sessions whose state must last: what you type with terminal_send stays in the same shell.
Close it with terminal_close when done.`,
  inputSchema: objectSchema({
    cwd: {
      type: 'string',
      minLength: 1,
      description:
        'Starting directory; a relative one starts at the default working directory. Default: the default working directory.',
    },
    cols: { type: 'integer', minimum: 20, maximum: 1_000, description: 'Width in columns. Default 120.' },
    rows: { type: 'integer', minimum: 5, maximum: 1_000, description: 'Height in rows. Default 40.' },
  }),
  async run(ctx, args) {
    const info = await ctx.rt.terminals.open(ctx.owner, {
      ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
      ...(args.cols !== undefined ? { cols: args.cols } : {}),
      ...(args.rows !== undefined ? { rows: args.rows } : {}),
    });
    ctx.cursors.delete(`term:${info.id}`);
    return {
      text:
        `Opened terminal ${info.id} (${info.shell}, started in ${info.cwd}). ` +
        `Type into it with terminal_send, e.g. {"terminal_id": "${info.id}", "input": "ls\\n"}.`,
      data: { terminal: info },
    };
  },
});

const terminalList = defineTool<Record<string, never>>({
  name: 'terminal_list',
  description: 'Lists your open terminals with their id, state (idle or busy) and starting directory.',
  inputSchema: objectSchema({}),
  async run(ctx) {
    const terminals = await ctx.rt.terminals.list(ctx.owner);
    const now = Date.now();
    const text =
      terminals.length === 0
        ? 'You have no open terminals. Open one with terminal_open.'
        : terminals.map((t) => describeTerminal(t, now)).join('\n');
    return { text, data: { terminals } };
  },
});

const terminalSignal = defineTool<{ terminal_id: string; signal: TerminalSignal }>({
  name: 'terminal_signal',
  description: `Sends a signal to the program running in the foreground of a terminal: SIGINT is Ctrl-C (interrupt), SIGTSTP is Ctrl-Z (suspend), SIGCONT resumes, SIGTERM/SIGKILL end it.
Then look at what happened with terminal_read, or terminal_send with empty input.`,
  inputSchema: objectSchema(
    {
      terminal_id: terminalId,
      signal: { type: 'string', enum: TERMINAL_SIGNALS, description: 'Which signal; usually SIGINT.' },
    },
    ['terminal_id', 'signal'],
  ),
  async run(ctx, args) {
    await ctx.rt.terminals.signal(ctx.owner, args.terminal_id, args.signal);
    return {
      text:
        `Sent ${args.signal} to the foreground program of terminal ${args.terminal_id}. ` +
        'See what it did with terminal_send with empty input (waits for output) or terminal_read.',
      data: { terminalId: args.terminal_id, signal: args.signal },
    };
  },
});

const terminalClose = defineTool<{ terminal_id: string }>({
  name: 'terminal_close',
  description:
    'Closes a terminal: hangs it up and ends every process started in it. Returns once they are all gone.',
  inputSchema: objectSchema({ terminal_id: terminalId }, ['terminal_id']),
  async run(ctx, args) {
    await ctx.rt.terminals.close(ctx.owner, args.terminal_id);
    ctx.cursors.delete(`term:${args.terminal_id}`);
    return {
      text: `Closed terminal ${args.terminal_id}; every process in it has ended.`,
      data: { terminalId: args.terminal_id, closed: true },
    };
  },
});

/**
 * The six terminal tools (SPEC section 8): open, send, read, signal, close, list.
 *
 * @example
 * ```ts
 * const tools = [bashTool(false), ...jobTools, ...terminalTools];
 * ```
 */
export const terminalTools: readonly ToolDefinition[] = [
  terminalOpen,
  terminalIoTools[0]!,
  terminalIoTools[1]!,
  terminalSignal,
  terminalClose,
  terminalList,
];
