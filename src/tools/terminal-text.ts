import type { TerminalExit, TerminalInfo, WaitReason } from '../terminals/terminal-types.js';
import { formatMs } from './tool-output.js';

/** The prompt of Tether's terminal shells (`PS1='$ '` in the rc file, T7). */
const SHELL_PROMPT = '$ ';
// OSC (…BEL or …ST), CSI, then any other escape (intermediates, one final byte: ESC ( B, ESC =);
// then stray BELs.
const ESCAPES = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[ -/]*[0-~]|\x07/g;

/**
 * Terminal output as a model should read it: escape sequences (colours, cursor moves, window
 * titles) removed and `\r\n` folded to `\n`. The services keep the raw text; only the tool's
 * rendering is cleaned.
 *
 * @example
 * ```ts
 * readableTerminalText('\x1b[1mhi\x1b[0m\r\n$ '); // 'hi\n$ '
 * ```
 */
export function readableTerminalText(raw: string): string {
  return raw.replace(ESCAPES, '').replace(/\r+\n/g, '\n');
}

/**
 * Why `terminal_send` returned, worded as what to do next (T5): answer a prompt
 * (`stdin_read`; or send the next command when it is the shell's own prompt that reads, seen
 * from `output` ending with it), poll (`inferred_idle`, `timeout`) or reopen (`session_exit`).
 *
 * @example
 * ```ts
 * explainWaitReason('stdin_read', { settleMs: 500, timeoutMs: 30_000 }, 'name? ');
 * ```
 */
export function explainWaitReason(
  reason: WaitReason,
  timing: { readonly settleMs: number; readonly timeoutMs: number },
  output = '',
): string {
  switch (reason) {
    case 'stdin_read':
      // The terminals' rc file sets PS1='$ ': a proven read after it is the shell's own prompt.
      if (output.endsWith(SHELL_PROMPT)) {
        return (
          '[ready: the shell is at its prompt, reading the terminal (proven). Whatever you ran has finished; ' +
          'send the next command with terminal_send.]'
        );
      }
      return (
        '[waiting for input: the program in this terminal is blocked reading from it (proven, not guessed). ' +
        'Answer it with terminal_send; end the answer with "\\n" to press Enter.]'
      );
    case 'inferred_idle':
      return (
        `[quiet: no output for ${formatMs(timing.settleMs)}. The program may be finished, still working, or waiting ` +
        'for something. If the output ends with a prompt or question, answer it with terminal_send; otherwise ' +
        'poll with terminal_send with empty input (waits for more output) or terminal_read.]'
      );
    case 'timeout':
      return (
        `[deadline: ${formatMs(timing.timeoutMs)} passed and the program was still busy. It keeps running: ` +
        'poll with terminal_send with empty input or terminal_read, or interrupt it with terminal_signal SIGINT.]'
      );
    case 'session_exit':
      return "[the terminal's shell exited: this terminal is gone. Open a new one with terminal_open if you need one.]";
  }
}

/**
 * One line per terminal for `terminal_list`.
 *
 * @example
 * ```ts
 * describeTerminal(info); // 'term_x · idle · /bin/bash · started in /repo · pid 4242 · open 3.0 s'
 * ```
 */
export function describeTerminal(t: TerminalInfo, now: number = Date.now()): string {
  return `${t.id} · ${t.state} · ${t.shell} · started in ${t.cwd} · pid ${t.pid} · open ${formatMs(now - t.openedAt)}`;
}

/**
 * What a session-exit notice says (agents' notices rendered for a model, MCP notifications).
 *
 * @example
 * ```ts
 * describeSessionExit(exit); // 'Terminal term_x ended on its own (exit code 0) after 4.0 s: /bin/bash in /repo. …'
 * ```
 */
export function describeSessionExit(exit: TerminalExit): string {
  const how =
    exit.reason === 'host_crashed'
      ? 'the terminal host crashed; its processes were killed'
      : exit.exitCode !== null
        ? `exit code ${exit.exitCode}`
        : `signal ${exit.signal ?? 'unknown'}`;
  return (
    `Terminal ${exit.id} ended on its own (${how}) after ${formatMs(exit.endedAt - exit.openedAt)}: ` +
    `${exit.shell} in ${exit.cwd}. Open a new one with terminal_open to continue.`
  );
}
