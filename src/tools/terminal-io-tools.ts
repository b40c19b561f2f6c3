import { explainWaitReason, readableTerminalText } from './terminal-text.js';
import { FACTS_RESERVE, fitTail, withNewline } from './tool-output.js';
import { defineTool, objectSchema } from './tool-schema.js';
import type { ToolDefinition } from './tool-types.js';

const DEFAULT_SETTLE_MS = 500;
const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/** The `terminal_id` property every terminal tool takes. */
export const terminalId = {
  type: 'string',
  minLength: 1,
  description: 'The terminal id returned by terminal_open (terminal_list shows yours).',
};

const terminalSend = defineTool<{
  terminal_id: string;
  input: string;
  settle_ms?: number;
  timeout_ms?: number;
}>({
  name: 'terminal_send',
  description: `Types input into a terminal and returns the output that followed, once it is sensible to look again — not necessarily when a command finished.
The result says why it returned: the program is waiting for your input (answer it), the output went quiet (poll again or answer a prompt), the deadline passed (still running), or the shell exited (open a new terminal).
To run a command, end it with "\\n" (Enter). Control keys are characters: "\\u0003" is Ctrl-C, "\\u0004" is Ctrl-D. Empty input types nothing and just waits for more output.`,
  inputSchema: objectSchema(
    {
      terminal_id: terminalId,
      input: {
        type: 'string',
        description: 'Exactly what to type, e.g. "ls -la\\n" or "yes\\n". May be empty.',
      },
      settle_ms: {
        type: 'integer',
        minimum: 0,
        maximum: 60_000,
        description: `Return after this many milliseconds without new output. Default ${DEFAULT_SETTLE_MS}.`,
      },
      timeout_ms: {
        type: 'integer',
        minimum: 1,
        maximum: 600_000,
        description: `Return at the latest after this many milliseconds, even if output keeps coming. Default ${DEFAULT_SEND_TIMEOUT_MS}.`,
      },
    },
    ['terminal_id', 'input'],
  ),
  async run(ctx, args) {
    const settleMs = args.settle_ms ?? DEFAULT_SETTLE_MS;
    const timeoutMs = args.timeout_ms ?? DEFAULT_SEND_TIMEOUT_MS;
    const result = await ctx.rt.terminals.send(ctx.owner, args.terminal_id, args.input, {
      settleMs,
      timeoutMs,
    });
    ctx.cursors.set(`term:${args.terminal_id}`, result.cursor);
    const output = fitTail(readableTerminalText(result.output), ctx.budget - FACTS_RESERVE, {
      otherwise: 'the earlier part of this output is not kept',
    });
    const lossy = result.lossy ? '[tether: some output was dropped by the retention limit]\n' : '';
    const text = `${lossy}${withNewline(output) || '(no output)\n'}${explainWaitReason(result.waitReason, { settleMs, timeoutMs }, output)}`;
    return { text, data: { ...result, output } };
  },
});

const terminalRead = defineTool<{
  terminal_id: string;
  cursor?: number;
  max_chars?: number;
  screen?: boolean;
}>({
  name: 'terminal_read',
  description: `Reads a terminal's output that arrived since your last terminal_send or terminal_read of it, without typing anything.
Use it to poll a program that is still running. Reading consumes: the next read continues after it.
With screen: true it instead shows the current screen as a person sees it (best for full-screen programs like less, vim, top); that does not consume output.`,
  inputSchema: objectSchema(
    {
      terminal_id: terminalId,
      cursor: {
        type: 'integer',
        minimum: 0,
        description: 'Where to continue (a cursor from an earlier result). Default: where you stopped.',
      },
      max_chars: {
        type: 'integer',
        minimum: 1,
        description: 'At most this many characters (capped by the output budget).',
      },
      screen: {
        type: 'boolean',
        description:
          'true: return the rendered screen (rows of text, cursor position) instead of new output.',
      },
    },
    ['terminal_id'],
  ),
  async run(ctx, args) {
    if (args.screen) {
      const screen = await ctx.rt.terminals.screen(ctx.owner, args.terminal_id);
      const { row, col } = screen.cursor;
      return {
        text: `${withNewline(screen.text) || '(the screen is empty)\n'}[screen ${screen.cols}x${screen.rows}, cursor at row ${row + 1}, column ${col + 1}]`,
        data: { ...screen },
      };
    }
    const key = `term:${args.terminal_id}`;
    const cursor = args.cursor ?? ctx.cursors.get(key) ?? 0;
    const maxChars = Math.min(args.max_chars ?? ctx.budget, ctx.budget - FACTS_RESERVE);
    const chunk = await ctx.rt.terminals.read(ctx.owner, args.terminal_id, cursor, maxChars);
    ctx.cursors.set(key, chunk.cursor);
    const output = readableTerminalText(chunk.text);
    const lossy = chunk.lossy
      ? '[tether: output before this point is not available (already read, or dropped by the retention limit)]\n'
      : '';
    const more =
      chunk.text.length >= maxChars
        ? `[more output is waiting: call terminal_read again (cursor ${chunk.cursor})]`
        : `[no more output yet (cursor ${chunk.cursor})]`;
    return {
      text: `${lossy}${withNewline(output) || '(no new output)\n'}${more}`,
      data: { ...chunk, text: output },
    };
  },
});

/**
 * `terminal_send` and `terminal_read`: the tools that move text through a terminal (T5, T3).
 *
 * @example
 * ```ts
 * const tools = [...terminalIoTools];
 * ```
 */
export const terminalIoTools: readonly ToolDefinition[] = [terminalSend, terminalRead];
