import * as pty from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { renderScreen } from '../../src/terminals/screen.js';
import { cli } from './cli-helpers.js';

const COLS = 200;
const ROWS = 100; // taller than the demo's output, so nothing scrolls off the rendered screen

let running: pty.IPty | null = null;
afterEach(() => {
  running?.kill('SIGTERM'); // only if the test failed before the demo ended
  running = null;
});

// Runs `tether demo` on a real pseudo-terminal and collects everything it drew.
function demoOnTerminal(): Promise<{ raw: string; exitCode: number }> {
  const term = pty.spawn(process.execPath, [cli, 'demo'], {
    cols: COLS,
    rows: ROWS,
    cwd: process.cwd(),
    env: { ...process.env, TERM: 'xterm-256color' },
  });
  running = term;
  let raw = '';
  term.onData((data) => {
    raw += data;
  });
  return new Promise((resolve) => {
    term.onExit(({ exitCode }) => {
      running = null;
      resolve({ raw, exitCode });
    });
  });
}

describe('tether demo on a terminal', () => {
  it('D2: the spinner runs while jobs run and its line is erased: the final screen ends with the quiescence line', async () => {
    const { raw, exitCode } = await demoOnTerminal();
    expect(exitCode).toBe(0);
    expect(raw).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \d background job\(s\) running/); // the TTY path was taken
    const screen = await renderScreen(raw, COLS, ROWS);
    expect(screen.text).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]|background job\(s\) running/);
    const lines = screen.text.split('\n');
    expect(lines.at(-1)).toMatch(/runtime +disposed: .*verified quiescent/);
  });
});
