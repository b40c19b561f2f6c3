/**
 * The PTY host thread: the one place node-pty lives (it is not thread-safe). Every PTY of a
 * host is forked, read, written and resized here; the main thread supervises this worker
 * through the protocol in `src/subprocess/pty/pty-protocol.ts`.
 *
 * Dying cleanly matters more than usual. node-pty reaps each leader on a native thread that
 * this thread joins at teardown, so a live leader (say, one ignoring SIGHUP) hangs the
 * worker's exit forever; and a leader that dies while this thread tears down makes node-pty
 * call into a stopped environment, which aborts the whole process (measured). So this thread
 * only ever ends with no leader left: the supervisor kills every PTY before terminate(), and
 * on an unexpected error — an uncaught exception, or process.exit() called by anyone in this
 * thread — the worker reports `fatal`, SIGKILLs every PTY group, waits until each leader's
 * exit was reported, and only then exits.
 */
import { statSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  PtyHostEvent,
  PtyHostRequest,
  PtyHostWorkerData,
  PtyOpenRequest,
} from '../src/subprocess/pty/pty-protocol.js';
import { BatchBuffers } from './pty-batches.js';
import { PtyCaptures } from './pty-captures.js';
import { PtyMaster } from './pty-master.js';
import { findExecutable } from './pty-path.js';

const port = parentPort;
if (port === null) throw new Error('workers/pty-host.js must run as a worker thread');
const tuning = workerData as PtyHostWorkerData;
const masters = new Map<number, PtyMaster>();
// Lent to a terminal while it has output pending; a few spares serve the busy ones (P8).
const batches = new BatchBuffers(tuning.batchBytes, 8);
const post = (event: PtyHostEvent): void => port.postMessage(event);
// T7: execute's marker search and capping run here, never on the main thread.
const captures = new PtyCaptures(post);
let dying = false;
const exitThread = process.exit.bind(process);

port.on('message', (req: PtyHostRequest) => {
  switch (req.type) {
    case 'open':
      open(req);
      break;
    case 'write': {
      const done = (error: string | null) => post({ type: 'written', id: req.id, seq: req.seq, error });
      const master = masters.get(req.id);
      if (master) master.write(req.data, done);
      else done('the terminal has exited');
      break;
    }
    case 'resize':
      masters.get(req.id)?.resize(req.cols, req.rows);
      break;
    case 'ack':
      masters.get(req.id)?.ack(req.chars);
      break;
    case 'sync':
      masters.get(req.id)?.drain();
      post({ type: 'synced', id: req.id, seq: req.seq });
      break;
    case 'capture':
      if (masters.has(req.id)) captures.watch(req.id, req.capture, req.marks, req.capChars);
      else captures.answerGone(req.id, req.capture);
      break;
    case 'release':
      captures.release(req.id, req.capture);
      break;
    case 'crash':
      setImmediate(() => {
        if (req.how === 'exit') process.exit(70);
        throw new Error('pty-host: crash requested');
      });
      break;
  }
});

// Forks one PTY and registers it; failures are answered, never thrown.
function open(req: PtyOpenRequest): void {
  const fail = (code: 'SPAWN_FAILED' | 'CWD_NOT_FOUND', message: string) =>
    post({ type: 'open-failed', id: req.id, code, message });
  if (dying) {
    fail('SPAWN_FAILED', 'the PTY host is shutting down after an error; open again');
    return;
  }
  if (!isDirectory(req.cwd)) {
    fail('CWD_NOT_FOUND', `cwd '${req.cwd}' is not an existing directory; pass a directory that exists`);
    return;
  }
  // forkpty's child reports a failed exec only as output and exit 1: check first.
  if (findExecutable(req.program ?? req.file, req.cwd, req.env) === null) {
    fail(
      'SPAWN_FAILED',
      `'${req.program ?? req.file}' was not found or is not executable (PATH of the env, cwd '${req.cwd}')`,
    );
    return;
  }
  let master: PtyMaster;
  try {
    master = PtyMaster.fork(req, tuning, batches, {
      data: (text) => {
        post({ type: 'data', id: req.id, text });
        captures.scan(req.id, text);
      },
      exit: (exitCode, signal) => {
        masters.delete(req.id);
        captures.releaseAll(req.id);
        post({ type: 'exit', id: req.id, exitCode, signal });
        // Not inside node-pty's exit callback: process.exit() there would abort the process.
        if (dying && masters.size === 0) setImmediate(() => exitThread(1));
      },
    });
  } catch (err) {
    fail('SPAWN_FAILED', `'${req.file}' could not be started on a PTY: ${describe(err)}`);
    return;
  }
  masters.set(req.id, master);
  const { pid, startTime } = master.identity;
  post({ type: 'opened', id: req.id, pid, startTime, ttyPath: master.ttyPath });
}

// An unexpected error: tell the supervisor, kill every group, exit once every leader was reaped.
function die(err: unknown): void {
  if (!dying) post({ type: 'fatal', message: describe(err) });
  dying = true;
  for (const master of masters.values()) master.killGroup();
  if (masters.size === 0) setImmediate(() => exitThread(1));
}

process.on('uncaughtException', die);
// An abrupt process.exit() would tear this thread down under live leaders (see above): it
// takes the orderly way instead, and throws so that its caller does not carry on.
process.exit = ((code?: number | string | null) => {
  die(new Error(`process.exit(${code ?? ''}) was called in the PTY host`));
  throw new Error('the PTY host is exiting');
}) as typeof process.exit;

// Last statement of the module: everything above loaded (node-pty included).
post({ type: 'ready' });

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
