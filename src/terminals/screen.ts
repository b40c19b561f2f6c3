import xterm from '@xterm/headless';
import type { FactBody } from '../observe/fact-types.js';

/** A terminal's screen as a person would see it: text rows, no escape sequences. */
export interface TerminalScreen {
  /** The visible rows joined by `\n`, trailing spaces trimmed, trailing empty rows dropped. */
  readonly text: string;
  readonly cols: number;
  readonly rows: number;
  /** Where the cursor is, 0-based, in visible rows. */
  readonly cursor: { readonly row: number; readonly col: number };
}

/** Characters of recent raw output kept to draw a screen from. */
export const SCREEN_TAIL_CHARS = 128 * 1024;

/**
 * The last {@link SCREEN_TAIL_CHARS} of a terminal's raw output, kept apart from the read
 * cursor's buffer (reading consumes that one; a screen must not depend on who read what).
 *
 * @example
 * ```ts
 * const tail = new ScreenTail();
 * pty.onData((text) => tail.push(text));
 * const screen = await renderScreen(tail.text(), 120, 40);
 * ```
 */
export class ScreenTail {
  #chunks: string[] = [];
  #length = 0;

  push(text: string): void {
    if (text.length === 0) return;
    this.#chunks.push(text);
    this.#length += text.length;
    while (this.#length - (this.#chunks[0]?.length ?? 0) >= SCREEN_TAIL_CHARS) {
      this.#length -= this.#chunks.shift()!.length;
    }
  }

  /** The kept output, starting at a line boundary when one is near (a cut escape would draw junk). */
  text(): string {
    const all = this.#chunks.join('');
    this.#chunks = [all];
    if (all.length <= SCREEN_TAIL_CHARS) return all;
    const cut = all.length - SCREEN_TAIL_CHARS;
    const line = all.indexOf('\n', cut);
    return all.slice(line >= 0 ? line + 1 : cut);
  }
}

/**
 * Draws `raw` on a headless xterm (`@xterm/headless`: the emulator VS Code's terminal uses)
 * of the terminal's size and returns what is on screen. Full-screen programs (less, vim,
 * top) redraw themselves, so the recent tail is enough to show their screen.
 *
 * @example
 * ```ts
 * (await renderScreen('ab\rX\r\n$ ', 80, 24)).text; // 'Xb\n$'
 * ```
 */
export async function renderScreen(raw: string, cols: number, rows: number): Promise<TerminalScreen> {
  const terminal = new xterm.Terminal({ cols, rows, scrollback: 0, allowProposedApi: true });
  try {
    await new Promise<void>((resolve) => terminal.write(raw, resolve));
    const buffer = terminal.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < rows; y++)
      // trimEnd: xterm trims only cells never written; a prompt's written space stays otherwise.
      lines.push((buffer.getLine(buffer.viewportY + y)?.translateToString(true) ?? '').trimEnd());
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    return { text: lines.join('\n'), cols, rows, cursor: { row: buffer.cursorY, col: buffer.cursorX } };
  } finally {
    terminal.dispose();
  }
}

/**
 * V2: a terminal's screen as a `terminal.screen` fact (what the mirror shows).
 *
 * @example
 * ```ts
 * facts.watch(`terminal:${record.id}`, () => screenFact(record));
 * ```
 */
export async function screenFact(record: {
  readonly id: string;
  readonly screenTail: ScreenTail;
  readonly spec: { readonly cols: number; readonly rows: number };
}): Promise<FactBody> {
  const { cols, rows } = record.spec;
  const screen = await renderScreen(record.screenTail.text(), cols, rows);
  return { type: 'terminal.screen', actor: `terminal:${record.id}`, text: screen.text, cols, rows };
}
