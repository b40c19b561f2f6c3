// What several benchmarks do the same way: a raw node-pty run counted on this thread, a job read
// to its end through jobs.read, and a timed call.
import { createRequire } from 'node:module';
import { sanitizeEnv } from '../dist/src/subprocess/env.js';

const require = createRequire(import.meta.url);

/** Raw node-pty on this thread running `command` under bash; resolves with the chars it printed. */
export function rawPtyChars(command) {
  const pty = require('node-pty');
  const env = sanitizeEnv(process.env, {}, { TERM: 'xterm' });
  return new Promise((resolve) => {
    const term = pty.spawn('/bin/bash', ['-c', command], { cols: 80, rows: 24, cwd: process.cwd(), env });
    let chars = 0;
    term.onData((text) => {
      chars += text.length;
    });
    term.onExit(() => resolve(chars));
  });
}

/** Starts `command` as a background job of `lease` and reads it to its end; resolves with its chars. */
export async function readJobToEnd(rt, lease, command) {
  const info = await rt.shell.background(lease.token, { command });
  let chars = 0;
  for (let cursor = 0; ; ) {
    const page = await rt.jobs.read(lease.token, info.id, cursor, 65_536);
    chars += page.text.length;
    cursor = page.cursor;
    if (page.done) return chars;
    if (page.text.length === 0) await rt.jobs.wait(lease.token, info.id, 5);
  }
}

/** `fn`'s result and how long it took, in ms. */
export async function timed(fn) {
  const t0 = performance.now();
  const result = await fn();
  return { ms: performance.now() - t0, result };
}
