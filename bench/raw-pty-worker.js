// A worker thread holding raw node-pty terminals (bench/owners.js's baseline): each runs the
// shell a Tether terminal runs (`bash --noprofile --norc -i`, 120×40, TERM=xterm-256color, the
// sanitized env) and counts as idle once it printed its first prompt. `{ type: 'open', count }`
// opens that many more and posts `{ type: 'idle', heapUsed, external }` (this isolate's heap)
// when all are idle; `{ type: 'close' }` kills every PTY, waits for each exit and posts
// `{ type: 'closed' }`. Nobody in between: no registry, screen, retention or tree kill beyond
// node-pty's own SIGHUP to the shell.
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { sanitizeEnv } from '../dist/src/subprocess/env.js';

const require = createRequire(import.meta.url);
const pty = require('node-pty');
const env = sanitizeEnv(process.env, {}, { TERM: 'xterm-256color', PAGER: 'cat', GIT_PAGER: 'cat' });
const terms = [];

// One shell on a new PTY; resolves once it printed something (its prompt).
function open() {
  const term = pty.spawn('/bin/bash', ['--noprofile', '--norc', '-i'], {
    cols: 120,
    rows: 40,
    cwd: workerData.cwd,
    env,
  });
  terms.push({ term, exited: new Promise((resolve) => term.onExit(resolve)) });
  return new Promise((resolve) => {
    const sub = term.onData(() => {
      sub.dispose();
      resolve();
    });
  });
}

parentPort.on('message', async (message) => {
  if (message.type === 'open') {
    await Promise.all(Array.from({ length: message.count }, open));
    const { heapUsed, external } = process.memoryUsage();
    parentPort.postMessage({ type: 'idle', heapUsed, external });
  } else if (message.type === 'close') {
    for (const { term } of terms) term.kill();
    await Promise.all(terms.map((t) => t.exited));
    parentPort.postMessage({ type: 'closed' });
    parentPort.close();
  }
});
