import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOwnerToken, TerminalInfo } from '../../src/index.js';
import { readableTerminalText } from '../../src/tools/terminal-text.js';
import { foregroundTaken } from '../support/proc-oracle.js';
import { failed, ok, type ToolHarness, toolHarness } from './tool-harness.js';

let h: ToolHarness;
beforeAll(async () => {
  h = await toolHarness();
});
afterAll(async () => {
  await h.close();
});
// Whatever a test leaves open (e.g. after a failed assertion) is closed before the next one.
const owners: AgentOwnerToken[] = [];
afterEach(async () => {
  await Promise.all(owners.splice(0).map((owner) => h.rt.terminals.drainOwner(owner)));
});

// A fresh owner with one open terminal.
async function openTerminal() {
  const owner = h.rt.owners.host().token;
  owners.push(owner);
  const opened = ok(await h.tools.call(owner, 'terminal_open', {}));
  const { terminal } = opened.data as { terminal: TerminalInfo };
  expect(opened.text).toContain(`Opened terminal ${terminal.id}`);
  // A long silence budget: where a test expects a proof (stdin_read), load cannot fake quiet.
  const send = (input: string, extra: Record<string, unknown> = {}) =>
    h.tools.call(owner, 'terminal_send', { terminal_id: terminal.id, input, settle_ms: 10_000, ...extra });
  return { owner, id: terminal.id, pid: terminal.pid, send };
}

describe('terminal tools', () => {
  it('T3, M: terminal_read with screen: true shows the rendered screen and consumes nothing', async () => {
    const t = await openTerminal();
    ok(await t.send('printf "abc\\rX\\n\\033[1mbold\\033[0m\\n"\n'));
    const screen = ok(await h.tools.call(t.owner, 'terminal_read', { terminal_id: t.id, screen: true }));
    expect(screen.text).toMatch(/^Xbc$/m);
    expect(screen.text).toMatch(/^bold$/m);
    expect(screen.text).toMatch(/\[screen 120x40, cursor at row \d+, column \d+\]$/);
    expect(screen.text).not.toContain('\x1b');
  });

  it('T5, M: a prompt is reported as waiting for input, the answer is taken, state survives (T1)', async () => {
    const t = await openTerminal();
    const asked = ok(await t.send('read -p "name? " n\n'));
    expect(asked.data).toMatchObject({ waitReason: 'stdin_read' });
    expect(asked.text).toMatch(/name\? \n\[waiting for input: .*Answer it with terminal_send/);
    ok(await t.send('Ada\n'));
    const echoed = ok(await t.send('echo "hi $n"\n'));
    expect(echoed.text).toContain('hi Ada\n');
    // The shell's own prompt reading the terminal means the command finished.
    expect(echoed.text).toMatch(/\$ \n\[ready: the shell is at its prompt/);
    const list = ok(await h.tools.call(t.owner, 'terminal_list', {}));
    expect(list.text).toMatch(new RegExp(`^${t.id} · idle · /bin/bash`));
    const closed = ok(await h.tools.call(t.owner, 'terminal_close', { terminal_id: t.id }));
    expect(closed.text).toContain('every process in it has ended');
    expect(ok(await h.tools.call(t.owner, 'terminal_list', {})).text).toContain('no open terminals');
  });

  it('T3, T5: a quiet program is "poll again"; terminal_read continues after the send', async () => {
    const t = await openTerminal();
    const quiet = ok(await t.send('echo start; sleep 0.4; echo finish\n', { settle_ms: 100 }));
    expect(quiet.data).toMatchObject({ waitReason: 'inferred_idle' });
    expect(quiet.text).toContain('[quiet: no output for 100 ms');
    let seen = (quiet.data as { output: string }).output;
    while (!/^finish$/m.test(seen)) {
      await sleep(50); // a poll that returns at once must not starve the PTY worker's messages
      const read = ok(await h.tools.call(t.owner, 'terminal_read', { terminal_id: t.id }));
      seen += (read.data as { text: string }).text;
    }
    // Each piece of output was seen once: the read continued where the send stopped.
    expect(seen.match(/^start$/gm)).toHaveLength(1);
    expect(seen.match(/^finish$/gm)).toHaveLength(1);
    await h.tools.call(t.owner, 'terminal_close', { terminal_id: t.id });
  });

  it('T5, T8: a deadline says the program still runs; SIGINT interrupts it', async () => {
    const t = await openTerminal();
    const busy = ok(await t.send('while :; do echo tick; sleep 0.05; done\n', { timeout_ms: 300 }));
    expect(busy.data).toMatchObject({ waitReason: 'timeout' });
    expect(busy.text).toContain('[deadline: 300 ms passed and the program was still busy');
    await foregroundTaken(t.pid); // on a loaded machine the loop may start after the deadline
    const sent = ok(await h.tools.call(t.owner, 'terminal_signal', { terminal_id: t.id, signal: 'SIGINT' }));
    expect(sent.text).toContain(`Sent SIGINT to the foreground program of terminal ${t.id}`);
    // The loop is gone: the shell takes the next command and is proven back at its prompt.
    const back = ok(await t.send('echo back\n'));
    expect(back.data).toMatchObject({ waitReason: 'stdin_read' });
    expect(back.text).toMatch(/^back$/m);
    await h.tools.call(t.owner, 'terminal_close', { terminal_id: t.id });
  });

  it('T5: when the shell exits the result says to open a new terminal; the id is then closed', async () => {
    const t = await openTerminal();
    const exited = ok(await t.send('exit\n'));
    expect(exited.data).toMatchObject({ waitReason: 'session_exit' });
    expect(exited.text).toContain('this terminal is gone. Open a new one with terminal_open');
    const again = failed(await t.send('echo hi\n'), 'TERMINAL_CLOSED');
    expect(again.text).toContain('terminal_open');
  });

  it('T9: another owner’s terminal is TERMINAL_NOT_FOUND with a pointer to terminal_list', async () => {
    const t = await openTerminal();
    const stranger = h.rt.owners.host().token;
    const r = failed(
      await h.tools.call(stranger, 'terminal_send', { terminal_id: t.id, input: 'id\n' }),
      'TERMINAL_NOT_FOUND',
    );
    expect(r.text).toContain('terminal_list');
    await h.tools.call(t.owner, 'terminal_close', { terminal_id: t.id });
  });
});

describe('readableTerminalText', () => {
  it('drops escape sequences and folds CRLF', () => {
    expect(readableTerminalText('\x1b]0;title\x07\x1b[1;31mred\x1b[0m\r\n$ \x1b(B')).toBe('red\n$ ');
  });
});
